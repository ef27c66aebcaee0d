import CHapiNghttp2

/// nghttp2's callbacks: C functions that find the connection through the session's user data
/// and the exchange through the stream's.
enum H2Callbacks {
    static func connection(_ userData: UnsafeMutableRawPointer?) -> H2Connection? {
        userData.map { Unmanaged<H2Connection>.fromOpaque($0).takeUnretainedValue() }
    }

    static func exchange(_ session: OpaquePointer?, _ streamID: Int32) -> H2Exchange? {
        nghttp2_session_get_stream_user_data(session, streamID).map { Unmanaged<H2Exchange>.fromOpaque($0).takeUnretainedValue() }
    }

    static func install(on callbacks: OpaquePointer) {
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { session, frame, userData in
            guard let frame, let connection = H2Callbacks.connection(userData) else { return 0 }
            connection.loop.frameReceived(frame.pointee, on: connection)
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { session, frame, _ in
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            H2Callbacks.exchange(session, frame.pointee.hd.stream_id)?.requestSent = true
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { session, frame, name, nameLength, value, valueLength, _, userData in
            guard let frame, let name, let value, let connection = H2Callbacks.connection(userData),
                let exchange = H2Callbacks.exchange(session, frame.pointee.hd.stream_id)
            else { return 0 }
            connection.loop.headerReceived(
                UnsafeBufferPointer(start: name, count: nameLength), UnsafeBufferPointer(start: value, count: valueLength),
                for: exchange, on: connection)
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { session, _, streamID, data, length, userData in
            guard let data, let connection = H2Callbacks.connection(userData), let exchange = H2Callbacks.exchange(session, streamID)
            else { return 0 }
            connection.loop.dataReceived(UnsafeBufferPointer(start: data, count: length), for: exchange, on: connection)
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, userData in
            guard let connection = H2Callbacks.connection(userData) else { return 0 }
            connection.loop.streamClosed(streamID, errorCode: errorCode, on: connection)
            return 0
        }
    }

    /// Copies the next piece of the request body into nghttp2's frame buffer.
    static let readBody: nghttp2_data_source_read_callback = { _, _, buffer, length, flags, source, _ in
        guard let pointer = source?.pointee.ptr, let buffer, let flags else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
        let exchange = Unmanaged<H2Exchange>.fromOpaque(pointer).takeUnretainedValue()
        let count = min(length, exchange.body.count - exchange.bodyOffset)
        if count > 0 {
            exchange.body.withUnsafeBufferPointer { body in
                if let base = body.baseAddress { buffer.update(from: base + exchange.bodyOffset, count: count) }
            }
            exchange.bodyOffset += count
        }
        if exchange.bodyOffset >= exchange.body.count { flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue) }
        return count
    }
}
