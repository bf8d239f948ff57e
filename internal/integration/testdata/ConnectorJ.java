// Logs in to a Lockstep server with MySQL Connector/J and prints one line
// per login: the account, whether TLS was used, and the protocol.
//
// usage: java -cp mysql-connector-j.jar ConnectorJ.java PORT TRUSTSTORE.p12
//
// Logins: a caching_sha2_password account over TLS verifying the server's
// certificate and name against the truststore (full authentication, the
// password inside TLS), the same account without TLS (the RSA exchange,
// with allowPublicKeyRetrieval, as Connector/J requires), and again
// without TLS (from the server's cache).
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;

public class ConnectorJ {
    public static void main(String[] args) throws Exception {
        String port = args[0], trust = args[1];
        String base = "jdbc:mysql://127.0.0.1:" + port + "/?user=sha&password=sha-pw&connectTimeout=10000";
        String[] urls = {
            base + "&sslMode=VERIFY_IDENTITY&trustCertificateKeyStoreUrl=file:" + trust
                + "&trustCertificateKeyStoreType=PKCS12&trustCertificateKeyStorePassword=changeit",
            base + "&sslMode=DISABLED&allowPublicKeyRetrieval=true",
            base + "&sslMode=DISABLED&allowPublicKeyRetrieval=true",
        };
        for (String url : urls) {
            try (Connection c = DriverManager.getConnection(url);
                 ResultSet rs = c.createStatement().executeQuery("SELECT CURRENT_USER()")) {
                rs.next();
                String tls = url.contains("sslMode=DISABLED") ? "plain" : "tls";
                System.out.println(rs.getString(1) + " " + tls);
            }
        }
    }
}
