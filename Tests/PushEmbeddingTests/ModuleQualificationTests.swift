import DeviceRegistry
import DeviceRegistryPostgres
import PushCore
import PushEnvelope
import PushNative
import PushTelemetry
import PushTransports
import Testing

/// No type shares its module's name, so a hub can always settle an ambiguity by qualifying:
/// were there a type `PushEnvelope` (as there once was) or `DeviceRegistry`, `PushEnvelope.X`
/// would look `X` up in that type, and this file would not compile.
@Suite struct ModuleQualificationTests {
    @Test func everyModuleQualifiesItsOwnTypes() {
        let types: [Any.Type] = [
            PushEnvelope.PushEnvelopeCipher.self, PushEnvelope.PushNotificationPayload.self, PushEnvelope.PushKey.self,
            DeviceRegistry.PushDeviceRegistry.self, DeviceRegistry.SQLitePushDeviceStore.self,
            DeviceRegistryPostgres.PostgresPushDeviceStore.self,
            PushCore.PushJSONValue.self, PushTransports.PushDeliveryReason.self, PushTelemetry.PushPrometheusMetrics.self,
            PushNative.NativePush.self, PushNative.NativePush.Configuration.self, PushNative.PushDispatchReport.self,
        ]
        #expect(types.count == 12)
    }
}
