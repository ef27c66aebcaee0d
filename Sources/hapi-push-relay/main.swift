#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushRelay
import PushSync

// hapi-push-relay: the push relay service. Configuration comes from RELAY_* variables
// (docs/relay.md). Exit codes: 0 after a clean stop (SIGTERM/SIGINT), 1 when it cannot start,
// 2 for a bad argument.
//
// The main thread only starts the server and then waits for a signal: SIGTERM and SIGINT are
// blocked in every thread (the mask is set before any thread exists, so all inherit it) and
// taken by `sigwait` here. Everything asynchronous runs on the concurrency pool.

func fail(_ message: String, status: Int32) -> Never {
    let bytes = Array("hapi-push-relay: \(message)\n".utf8)
    _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(status)
}

func run() -> Never {
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGTERM)
    sigaddset(&signals, SIGINT)
    pthread_sigmask(SIG_BLOCK, &signals, nil)
    signal(SIGPIPE, SIG_IGN)

    let arguments = Array(CommandLine.arguments.dropFirst())
    if arguments == ["--version"] {
        print("\(PushRelayServer.serviceName) \(PushRelayServer.version)")
        exit(0)
    }
    if arguments == ["--help"] || arguments == ["-h"] {
        print(
            """
            usage: hapi-push-relay [--version | --help]

            The HAPI push relay: POST /v1/push and GET /health, forwarding to APNs and FCM.
            Configured by environment (see docs/relay.md):
              \(PushRelayConfiguration.environmentVariables.joined(separator: "\n  "))
            """)
        exit(0)
    }
    if !arguments.isEmpty { fail("unexpected argument \(arguments[0]) (try --help)", status: 2) }

    // Thousands of hubs on kept-alive connections: as many descriptors as the system allows
    // (RELAY_MAX_CONNECTIONS' default is sized from this).
    PushRelayServer.raiseDescriptorLimit()
    let configuration: PushRelayConfiguration
    do {
        configuration = try PushRelayConfiguration(environment: PushRelayConfiguration.processEnvironment)
    } catch {
        fail(error.message, status: 1)
    }
    // Started as a task: with RELAY_REDIS_URL the start waits for the first connection attempt.
    // The main thread waits on a pthread condition (which ThreadSanitizer sees), not a semaphore.
    let outcome = WaitableLocked<Result<PushRelayServer, PushRelayStartupError>?>(nil)
    Task.detached {
        do throws(PushRelayStartupError) {
            let server = try await PushRelayServer.start(configuration: configuration)
            outcome.withLock { $0 = .success(server) }
        } catch {
            outcome.withLock { $0 = .failure(error) }
        }
        outcome.broadcast()
    }
    let server: PushRelayServer
    switch outcome.wait(until: { $0 != nil }, then: { $0 }) {
    case .success(let running): server = running
    case .failure(let error): fail(error.message, status: 1)
    case nil: fail("the start did not finish", status: 1)
    }

    var number: Int32 = 0
    while sigwait(&signals, &number) != 0 {}
    let reason = number == SIGINT ? "SIGINT" : "SIGTERM"
    let stopped = WaitableLocked(false)
    Task.detached {
        await server.stop(grace: .seconds(10), reason: reason)
        stopped.withLock { $0 = true }
        stopped.broadcast()
    }
    stopped.wait(until: { $0 }, then: { _ in })
    exit(0)
}

run()
