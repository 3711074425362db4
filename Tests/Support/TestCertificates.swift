import Foundation

/// A throw-away certificate authority and server certificates made with `openssl` (Debian's
/// package) in a test's scratch directory, for a broker's TLS listener.
public struct TestCertificates: Sendable {
    public static let openssl = ["/usr/bin/openssl", "/bin/openssl"].first { FileManager.default.isExecutableFile(atPath: $0) }
    public static var skipReason: String? { openssl == nil ? "needs openssl (apt-get install openssl)" : nil }

    /// The CA's certificate (PEM): what a client's `ca-file` names.
    public let caFile: String
    private let caKey: String
    private let directory: String

    /// A new CA named `name` (its files `<name>-ca.pem`, `<name>-ca.key`).
    public init(directory: String, name: String) throws {
        self.directory = directory
        caFile = "\(directory)/\(name)-ca.pem"
        caKey = "\(directory)/\(name)-ca.key"
        try Self.run([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
            "-subj", "/CN=evcapture test CA \(name)", "-keyout", caKey, "-out", caFile,
        ])
    }

    /// A server certificate signed by this CA for `names` (DNS names and IP addresses, as
    /// subjectAltName); its certificate and key files.
    public func server(_ label: String, names: [String]) throws -> (certificate: String, key: String) {
        let key = "\(directory)/\(label).key", csr = "\(directory)/\(label).csr", cert = "\(directory)/\(label).pem"
        let ext = "\(directory)/\(label).ext"
        let san = names.map { $0.allSatisfy { $0.isNumber || $0 == "." || $0 == ":" } ? "IP:\($0)" : "DNS:\($0)" }
        try "subjectAltName=\(san.joined(separator: ","))\n".write(toFile: ext, atomically: true, encoding: .utf8)
        try Self.run([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=\(names.first ?? label)",
            "-keyout", key, "-out", csr,
        ])
        try Self.run([
            "x509", "-req", "-in", csr, "-CA", caFile, "-CAkey", caKey, "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", cert,
        ])
        return (cert, key)
    }

    private static func run(_ arguments: [String]) throws {
        guard let openssl else { throw MosquittoBroker.BrokerError("no openssl") }
        let r = try MosquittoBroker.run([openssl] + arguments)
        guard r.status == 0 else { throw MosquittoBroker.BrokerError("openssl \(arguments.prefix(2).joined(separator: " ")): \(r.output)") }
    }
}
