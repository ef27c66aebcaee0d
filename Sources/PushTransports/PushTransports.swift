// PushTransports: the relay, APNs and FCM transports, sending through PushHTTP's client (nghttp2 for HTTP/2, libcurl for the rest).
