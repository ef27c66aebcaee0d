// PushTransports: the HTTP/2 client on libcurl and the relay, APNs and FCM transports.
