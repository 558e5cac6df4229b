package kiln.http.spi;

import com.code_intelligence.jazzer.junit.DictionaryEntries;
import com.code_intelligence.jazzer.junit.FuzzTest;

/**
 * Coverage-guided fuzzing of {@link RequestParser} with Jazzer: whatever the bytes, {@code parse}
 * answers "need more" (null), a request no longer than its input, or an {@link kiln.http.HttpException} with one
 * of the statuses the parser documents; never another exception, never a hang; the answer is the
 * same when the bytes sit inside a larger buffer, and more bytes never undo an answer (see
 * {@link ParserChecks#checkAnyInput}).
 *
 * <p>Two modes. Without the environment variable {@code JAZZER_FUZZ}, the test replays the seed
 * inputs in {@code src/test/resources/kiln/http/RequestParserFuzzTestInputs/parseArbitraryBytes/}
 * (valid requests the fuzzer starts from) as regression cases. With {@code JAZZER_FUZZ=1}, which
 * http/pom.xml's Surefire execution {@code fuzz-request-parser} sets, Jazzer mutates them under
 * coverage guidance for {@code maxDuration}; the generated corpus and crash inputs go under
 * {@code target/}. A crash input is replayed by copying it into the seed directory. Jazzer fuzzes
 * only one {@code @FuzzTest} per JVM and its agent stays in the JVM, so this is the module's only
 * one and it runs in a JVM of its own (see the pom).
 *
 * <p>The grammar-based properties (valid requests parse exactly, pipelining, framing conflicts,
 * limits) are {@link RequestParserPropertyTest}.
 */
class RequestParserFuzzTest {

    // libFuzzer dictionary syntax: CR, LF and tab as \xNN escapes, a quote as \"
    @DictionaryEntries({"GET", "POST", "OPTIONS", " /", "http://", "HTTP/1.1", "HTTP/1.0", "\\x0D\\x0A", "\\x0D\\x0A\\x0D\\x0A", ": ",
        "Host: a", "Content-Length: ", "Transfer-Encoding: chunked", "Connection: close", ";ext=\\\"v\\\"", "0\\x0D\\x0A\\x0D\\x0A",
        "ffffffff", "\\x09"})
    @FuzzTest(maxDuration = "12s")  // keep last: Jazzer requires its arguments sources to come after any others
    void parseArbitraryBytes(byte[] input) {
        ParserChecks.checkAnyInput(input);
    }
}
