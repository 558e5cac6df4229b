package kiln.kilim.example;

import static kiln.kilim.Fibers.await;

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
import kiln.kilim.KilimMain;
import kiln.kilim.Router;

/**
 * The handler guide's second example (docs/handlers.md): a todo list as a small REST API on fiber
 * handlers, kept identical to the guide's text and tested (including every acknowledged add
 * surviving SIGKILL) by TodoAppTest; in examples-kilim, not in kiln-http-kilim's jar.
 * Run it with {@code make demo APP=kiln.kilim.example.TodoApp}, then
 * {@code curl --json '{"title":"milk"}' http://127.0.0.1:8080/todos}.
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
            .get("/todos", req -> Response.json(await(db.read(txn -> {
                List<Todo> all = new ArrayList<>();
                todos.scan(txn, (id, todo) -> all.add(todo));
                return all;
            }))))
            .get("/todos/open", req -> {
                long open = await(db.read(txn -> {
                    long[] n = {0};
                    todos.scan(txn, (id, todo) -> {
                        if (!todo.done) n[0]++;
                        return true;
                    });
                    return n[0];
                }));
                return Response.json(Map.of("open", open));
            })
            .post("/todos", req -> {
                String title = req.json(Todo.class).title;         // malformed JSON: 400 with the reason
                if (title == null || title.isBlank()) throw new HttpException(400, "a todo needs a title");
                Todo added = await(db.write(txn -> {
                    Todo todo = new Todo(ids.next(txn), title, false); // the id commits with the row
                    todos.put(txn, todo.id, todo);
                    return todo;
                }));                                                 // durable when await returns
                return Response.created("/todos/" + added.id, added);
            })
            .get("/todos/{id}", req -> {
                long id = id(req);
                Todo todo = await(db.read(txn -> todos.get(txn, id)));
                if (todo == null) throw new HttpException(404, "no todo " + id);
                return Response.json(todo);
            })
            .put("/todos/{id}", req -> {                             // {"done":true}, and a new title if given
                long id = id(req);
                Todo change = req.json(Todo.class);
                Todo updated = await(db.write(txn -> {
                    Todo todo = todos.get(txn, id);
                    if (todo == null) return null;
                    Todo next = new Todo(id, change.title != null ? change.title : todo.title, change.done);
                    todos.put(txn, id, next);
                    return next;
                }));
                if (updated == null) throw new HttpException(404, "no todo " + id);
                return Response.json(updated);
            })
            .delete("/todos/{id}", req -> {
                long id = id(req);
                boolean deleted = await(db.write(txn -> todos.delete(txn, id)));
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

    /** {@code make demo APP=kiln.kilim.example.TodoApp}; the standard options, {@code --help} for them. */
    public static void main(String[] args) {
        KilimMain.serve("todo", args, TodoApp::routes);
    }
}
