package kiln.http;

import java.io.IOException;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

/** JSON bodies, written and read by Jackson with one shared, thread-safe {@link ObjectMapper}. */
public final class Json {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private Json() {
    }

    /**
     * @return {@code value} as UTF-8 JSON
     * @throws IllegalArgumentException when Jackson cannot serialize it (a server bug, not the client's)
     */
    public static byte[] write(Object value) {
        try {
            return MAPPER.writeValueAsBytes(value);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("cannot serialize " + value.getClass().getName() + " as JSON", e);
        }
    }

    /**
     * @param json UTF-8 JSON, e.g. a request's content
     * @return {@code json} bound to {@code type}
     * @throws HttpException 400 naming what is wrong when it is empty or does not bind
     */
    public static <T> T read(byte[] json, Class<T> type) {
        if (json.length == 0) throw new HttpException(400, "expected a JSON body, got none");
        try {
            return MAPPER.readValue(json, type);
        } catch (IOException e) {
            String why = e instanceof JsonProcessingException ? ((JsonProcessingException) e).getOriginalMessage() : e.getMessage();
            throw new HttpException(400, "malformed JSON for " + type.getSimpleName() + ": " + why);
        }
    }
}
