package kiln.loom.example;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import kiln.http.HttpException;
import kiln.http.Response;
import kiln.http.Request;
import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.Sequence;
import kiln.db.Table;
import kiln.loom.LoomMain;
import kiln.loom.Router;

/**
 * The handler guide's second example on virtual threads (docs/handlers.md), the twin of
 * {@code kiln.kilim.example.TodoApp} (join() where the fiber awaits), kept identical to the guide's
 * text and tested (including every acknowledged add surviving SIGKILL) by TodoAppTest; in
 * examples-loom, not in kiln-http-loom's jar. Run it with
 * {@code make demo SERVER=loom APP=kiln.loom.example.TodoApp}, then
 * {@code curl --json '{"title":"milk"}' http://127.0.0.1:8080/todos}. JDK 21+.
 */
public final class TodoApp {
    private TodoApp() {
    }

    /** A todo, stored and sent as JSON: {@code {"id":1,"title":"milk","done":false}}. */
    public static final class Todo {
        public long id;
        public String title;
        public boolean done;

        public Todo() {
        }

        Todo(long id, String title, boolean done) {
            this.id = id;
            this.title = title;
            this.done = done;
        }
    }

    /** @return the routes of the todo list over {@code db} */
    public static Router routes(Db db) {
        // README-BEGIN
        Table<Long, Todo> todos = db.table("todos", Codec.LONG, Codec.json(Todo.class));
        Sequence ids = db.sequence("todos");

        return new Router()
            .get("/todos", req -> Response.json(db.read(txn -> {
                List<Todo> all = new ArrayList<>();
                todos.scan(txn, (id, todo) -> all.add(todo));
                return all;
            }).join()))
            .get("/todos/open", req -> {
                long open = db.read(txn -> {
                    long[] n = {0};
                    todos.scan(txn, (id, todo) -> {
                        if (!todo.done) n[0]++;
                        return true;
                    });
                    return n[0];
                }).join();
                return Response.json(Map.of("open", open));
            })
            .post("/todos", req -> {
                String title = req.json(Todo.class).title;         // malformed JSON: 400 with the reason
                if (title == null || title.isBlank()) throw new HttpException(400, "a todo needs a title");
                Todo added = db.write(txn -> {
                    Todo todo = new Todo(ids.next(txn), title, false); // the id commits with the row
                    todos.put(txn, todo.id, todo);
                    return todo;
                }).join();                                           // durable when join() returns
                return Response.created("/todos/" + added.id, added);
            })
            .get("/todos/{id}", req -> {
                long id = id(req);
                Todo todo = db.read(txn -> todos.get(txn, id)).join();
                if (todo == null) throw new HttpException(404, "no todo " + id);
                return Response.json(todo);
            })
            .put("/todos/{id}", req -> {                             // {"done":true}, and a new title if given
                long id = id(req);
                Todo change = req.json(Todo.class);
                Todo updated = db.write(txn -> {
                    Todo todo = todos.get(txn, id);
                    if (todo == null) return null;
                    Todo next = new Todo(id, change.title != null ? change.title : todo.title, change.done);
                    todos.put(txn, id, next);
                    return next;
                }).join();
                if (updated == null) throw new HttpException(404, "no todo " + id);
                return Response.json(updated);
            })
            .delete("/todos/{id}", req -> {
                long id = id(req);
                boolean deleted = db.write(txn -> todos.delete(txn, id)).join();
                if (!deleted) throw new HttpException(404, "no todo " + id);
                return Response.noContent();                           // 204: no body, no Content-Length
            });
        // README-END
    }

    /** @return the {id} of the path, a number; 404 when it is not one */
    private static long id(Request req) {
        try {
            return Long.parseLong(req.pathParam("id"));
        } catch (NumberFormatException e) {
            throw new HttpException(404, "no todo " + req.pathParam("id"));
        }
    }

    /** {@code make demo SERVER=loom APP=kiln.loom.example.TodoApp}; the standard options, {@code --help} for them. */
    public static void main(String[] args) {
        LoomMain.serve("todo", args, TodoApp::routes);
    }
}
