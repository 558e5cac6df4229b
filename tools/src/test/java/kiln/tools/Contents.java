package kiln.tools;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import kiln.db.Keys;
import kiln.db.KvCursor;
import kiln.db.KvEngine;
import kiln.db.KvEngines;
import kiln.db.KvTxn;

/** A whole database, space by space, each entry as hex {@code key=value}: what two copies are compared by. */
final class Contents {
    private Contents() {
    }

    static Map<String, List<String>> of(String url) {
        try (KvEngine engine = KvEngines.openReadOnly(url)) {
            return of(engine);
        }
    }

    static Map<String, List<String>> of(KvEngine engine) {
        Map<String, List<String>> all = new LinkedHashMap<>();
        try (KvTxn txn = engine.beginRead()) {
            for (String name : engine.spaceNames(txn)) {
                List<String> entries = new ArrayList<>();
                try (KvCursor c = txn.range(engine.space(txn, name, false), null, null, false, 0)) {
                    while (c.next()) entries.add(Literal.hex(Keys.toArray(c.key())) + "=" + Literal.hex(Keys.toArray(c.value())));
                }
                all.put(name, entries);
            }
        }
        return all;
    }
}
