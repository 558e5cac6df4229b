package kiln.http;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Which Accept values get an error as problem details (JSON) rather than plain text: RFC 9110 section 12.5.1. */
class AcceptTest {
    @ParameterizedTest(name = "Accept: {0} -> JSON {1}")
    @CsvSource(delimiter = '|', nullValues = "NONE", value = {
        "NONE                                                                   | false",
        "''                                                                     | false",
        "*/*                                                                    | false",  // curl
        "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8        | false",  // a browser
        "text/plain                                                             | false",
        "application/json, text/plain                                           | false",  // a tie: the default
        "application/json;q=0                                                   | false",
        "application/json;q=0, */*                                              | false",
        "application/json;q=0.5, text/plain;q=0.8                               | false",
        "application/json;q=2                                                   | false",  // not a qvalue: ignored
        "application/json                                                       | true",
        "Application/JSON                                                       | true",
        "application/problem+json                                               | true",
        "application/json, */*                                                  | true",   // more specific at the same weight
        "application/json, */*;q=0.8                                            | true",
        "application/json;charset=utf-8                                         | true",
        "text/plain;q=0.5, application/json                                     | true",
        "application/*                                                          | true",
        "text/*;q=0.1, application/json;q=0.2                                   | true",
        "application/problem+json;q=0.9, application/json;q=0.1, text/plain;q=0.5 | true",
    })
    void prefersJsonOnlyWhenJsonOutweighsPlainText(String accept, boolean json) {
        assertEquals(json, Accept.prefersJson(accept));
    }
}
