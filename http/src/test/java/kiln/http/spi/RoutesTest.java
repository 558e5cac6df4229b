package kiln.http.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

import kiln.http.HttpException;
import kiln.http.Response;

/** The routing every front end shares: exact paths, templates, HEAD, 404 and 405. */
class RoutesTest {
    private final Routes<String> routes = new Routes<String>()
        .add("GET", "/todos", "list")
        .add("POST", "/todos", "add")
        .add("GET", "/todos/{id}", "one")
        .add("PUT", "/todos/{id}", "update")
        .add("DELETE", "/todos/{id}", "remove")
        .add("GET", "/todos/{id}/notes/{note}", "note")
        .add("GET", "/todos/open", "open");

    @Test
    void exactPathsWinOverTemplatesAndParametersAreWholeSegments() {
        assertEquals("open", routes.find("GET", "/todos/open").handler);
        Routes.Route<String> one = routes.find("GET", "/todos/42");
        assertEquals("one", one.handler);
        assertEquals("42", one.param("/todos/42", "id"));
        assertEquals("/todos/{id}", one.pattern());
        Routes.Route<String> note = routes.find("GET", "/todos/7/notes/a%20b");
        assertEquals("7", note.param("/todos/7/notes/a%20b", "id"));
        assertEquals("a b", note.param("/todos/7/notes/a%20b", "note"), "percent-decoded");
        assertNull(routes.find("GET", "/todos/"), "an empty segment is no parameter");
        assertNull(routes.find("GET", "/todos/7/extra"));
        assertThrows(IllegalArgumentException.class, () -> one.param("/todos/42", "name"));
        assertEquals(400, assertThrows(HttpException.class, () -> one.param("/todos/%zz", "id")).status());
    }

    @Test
    void headFallsBackToGetAndMissesAre404Or405WithAllow() {
        assertEquals("one", routes.find("HEAD", "/todos/1").handler);
        assertEquals("update", routes.find("PUT", "/todos/1").handler);
        assertNull(routes.find("PATCH", "/todos/1"));
        Response notAllowed = routes.miss("PATCH", "/todos/1");
        assertEquals(405, notAllowed.status);
        assertEquals("GET, HEAD, PUT, DELETE, OPTIONS", notAllowed.header("Allow"));
        assertEquals("GET, HEAD, POST, OPTIONS", routes.miss("PATCH", "/todos").header("Allow"));
        assertEquals(404, routes.miss("GET", "/nope").status);
    }

    /** RFC 9110 section 9.3.7: 200, Allow, no content; OPTIONS * (RFC 9112 section 3.2.4) is about the whole server. */
    @Test
    void optionsIsAnsweredWithAllowForAPathAndForTheServer() {
        Response one = routes.miss("OPTIONS", "/todos/1");
        assertEquals(200, one.status);
        assertEquals(0, one.body.length);
        assertEquals("GET, HEAD, PUT, DELETE, OPTIONS", one.header("Allow"));
        Response server = routes.miss("OPTIONS", "*");
        assertEquals(200, server.status);
        assertEquals("GET, HEAD, POST, PUT, DELETE, OPTIONS", server.header("Allow"));
        assertEquals(404, routes.miss("OPTIONS", "/nope").status);
        routes.add("OPTIONS", "/todos", "own");
        assertEquals("own", routes.find("OPTIONS", "/todos").handler, "a route of its own wins");
    }

    @Test
    void clashingOrMalformedRoutesAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> routes.add("GET", "/todos/{key}", "x"), "same shape, other name");
        assertThrows(IllegalArgumentException.class, () -> routes.add("GET", "/todos", "x"), "twice");
        assertThrows(IllegalArgumentException.class, () -> routes.add("GET", "todos", "x"));
        assertThrows(IllegalArgumentException.class, () -> routes.add("GET", "/todos/id{x}", "x"));
        assertThrows(IllegalArgumentException.class, () -> routes.add("GET", "/a/{x}/{x}", "x"));
        assertThrows(IllegalArgumentException.class, () -> routes.add("G T", "/a", "x"));
        routes.add("PATCH", "/todos/{id}", "patch");
        assertEquals("patch", routes.find("PATCH", "/todos/3").handler, "another method on an existing template");
    }
}
