package kiln.bench.netty;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

/** The body of {@code /json}, {@code {"message":"Hello, World!"}}. */
record Message(String message) {
    /** One mapper for every thread (Jackson's mappers are thread-safe), as kiln's {@code kiln.http.Json}. */
    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** @return {@code {"message":"Hello, World!"}}, serialized by Jackson now, as kiln's demo does per request */
    static byte[] json() {
        try {
            return MAPPER.writeValueAsBytes(new Message("Hello, World!"));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot serialize the /json message", e);
        }
    }
}
