package kiln.server;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import kiln.db.Db;
import kiln.db.DbException;

/**
 * {@code --backup DIR}: instead of serving, write a compacted copy of the {@code --data} database
 * into DIR ({@link Db#backup}), print one line naming the file and its size, and exit 0; or print
 * one error line and exit 1. It may run while a server serves the same directory: LMDB lets a second
 * process open the environment and copy a read snapshot (the server's writes go on meanwhile). It
 * opens the database without the writers' lock the server holds ({@code lmdb:DIR?lock=false}): its
 * only write is its mark, in a table the server never reads.
 * Run it as the user the server runs as, so that it can open the environment's lock file.
 */
final class BackupCommand {
    private BackupCommand() {
    }

    static void runAndExit(String program, ServerOptions options) {
        Path data = options.data.toAbsolutePath();
        Path target = options.backup.toAbsolutePath();
        if (!Files.isRegularFile(data.resolve("data.mdb"))) {
            ServerOptions.fail(program, "no database to back up in " + data + " (no data.mdb there); give the server's --data directory");
        }
        try (Db db = Db.open("lmdb:" + data + "?lock=false")) {
            Path file = db.backup(target);
            long bytes = Files.size(file);
            System.out.println(program + ": backed up " + data + " to " + file + ": " + bytes + " bytes (" + mebibytes(bytes) + ")");
        } catch (DbException e) {
            ServerOptions.fail(program, e.getMessage());
        } catch (IOException e) {
            ServerOptions.fail(program, "backup written to " + target + " but its size cannot be read: " + e);
        }
        System.out.flush();
        System.exit(0);
    }

    private static String mebibytes(long bytes) {
        return String.format(java.util.Locale.ROOT, "%.1f MiB", bytes / (1024.0 * 1024.0));
    }
}
