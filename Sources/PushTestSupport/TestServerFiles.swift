import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform

/// What the test servers that are not ours (`nghttpd`, `redis-server`, PostgreSQL) need before
/// they start: a free loopback port and a throwaway CA with one server certificate, made with
/// the `openssl` command since those servers read PEM files.
public enum TestServerFiles {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// A port the kernel just handed out on 127.0.0.1 (closed again for the server to take).
    public static func freePort() throws(Failure) -> Int {
        let fd = Platform.makeStreamSocket(family: AF_INET, nonBlocking: false, closeOnExec: false)
        guard fd >= 0 else { throw Failure(description: "socket(): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw Failure(description: "bind(127.0.0.1:0): \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// `ca.pem`/`ca.key` (a P-256 CA named `caName`) and `server.pem`/`server.key` (subject
    /// `serverName`, the given subject alternative names, e.g. `IP:127.0.0.1,DNS:localhost`),
    /// valid two days, in `directory`.
    public static func makeCertificates(in directory: String, caName: String, serverName: String, subjectAltNames: String) throws(Failure) {
        do {
            try Data("subjectAltName=\(subjectAltNames)\n".utf8).write(to: URL(fileURLWithPath: directory + "/san.cnf"))
        } catch {
            throw Failure(description: "cannot write \(directory)/san.cnf: \(error)")
        }
        let steps: [[String]] = [
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=\(caName)",
             "-keyout", directory + "/ca.key", "-out", directory + "/ca.pem", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign"],
            ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=\(serverName)",
             "-keyout", directory + "/server.key", "-out", directory + "/server.csr"],
            ["x509", "-req", "-in", directory + "/server.csr", "-CA", directory + "/ca.pem", "-CAkey", directory + "/ca.key", "-CAcreateserial",
             "-days", "2", "-out", directory + "/server.pem", "-extfile", directory + "/san.cnf"],
        ]
        for arguments in steps {
            let openssl = Process()
            openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            openssl.arguments = arguments
            openssl.standardOutput = FileHandle.nullDevice
            openssl.standardError = FileHandle.nullDevice
            do { try openssl.run() } catch { throw Failure(description: "cannot run /usr/bin/openssl: \(error)") }
            openssl.waitUntilExit()
            guard openssl.terminationStatus == 0 else {
                throw Failure(description: "openssl \(arguments[0]) failed with status \(openssl.terminationStatus)")
            }
        }
    }
}
