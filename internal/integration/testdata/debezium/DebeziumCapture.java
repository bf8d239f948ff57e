import io.debezium.engine.ChangeEvent;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.format.Json;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

// Debezium's MySQL connector in its embedded engine, against a server on
// 127.0.0.1:PORT: an initial snapshot of database cdc, then the binlog.
// Prints "<op> <table> <id>" for each change event (r: read by the
// snapshot, c: insert streamed) until a row of cdc.done arrives or the
// time runs out.
public class DebeziumCapture {
    static final Pattern OP = Pattern.compile("\"op\":\"(\\w)\"");
    static final Pattern TABLE = Pattern.compile("\"table\":\"(\\w+)\"");
    static final Pattern ID = Pattern.compile("\"after\":\\{\"id\":(-?\\d+)");

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.setProperty("name", "lockstep-test");
        p.setProperty("connector.class", "io.debezium.connector.mysql.MySqlConnector");
        p.setProperty("offset.storage", "org.apache.kafka.connect.storage.MemoryOffsetBackingStore");
        p.setProperty("offset.flush.interval.ms", "1000");
        p.setProperty("database.hostname", "127.0.0.1");
        p.setProperty("database.port", args[0]);
        p.setProperty("database.user", "root");
        p.setProperty("database.password", "");
        p.setProperty("database.server.id", "5400");
        p.setProperty("database.ssl.mode", "disabled");
        p.setProperty("topic.prefix", "lockstep");
        p.setProperty("database.include.list", "cdc");
        p.setProperty("schema.history.internal", "io.debezium.relational.history.MemorySchemaHistory");
        p.setProperty("snapshot.mode", "initial");
        p.setProperty("key.converter.schemas.enable", "false");
        p.setProperty("value.converter.schemas.enable", "false");
        CountDownLatch done = new CountDownLatch(1);
        DebeziumEngine<ChangeEvent<String, String>> engine = DebeziumEngine.create(Json.class)
            .using(p)
            .notifying(record -> {
                String v = record.value();
                if (v == null) {
                    return;
                }
                Matcher op = OP.matcher(v), table = TABLE.matcher(v), id = ID.matcher(v);
                if (op.find() && table.find()) {
                    String line = op.group(1) + " " + table.group(1) + " " + (id.find() ? id.group(1) : "-");
                    synchronized (System.out) {
                        System.out.println(line);
                        System.out.flush();
                    }
                    if (table.group(1).equals("done")) {
                        done.countDown();
                    }
                }
            })
            .using((success, message, error) -> {
                if (!success) {
                    System.err.println("engine stopped: " + message);
                    if (error != null) {
                        error.printStackTrace();
                    }
                }
                done.countDown();
            })
            .build();
        ExecutorService ex = Executors.newSingleThreadExecutor();
        ex.execute(engine);
        boolean finished = done.await(Long.parseLong(args[1]), TimeUnit.SECONDS);
        engine.close();
        ex.shutdown();
        ex.awaitTermination(30, TimeUnit.SECONDS);
        if (!finished) {
            System.err.println("timed out");
            System.exit(2);
        }
        System.exit(0);
    }
}
