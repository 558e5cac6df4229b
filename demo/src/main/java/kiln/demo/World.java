package kiln.demo;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;

/**
 * A row of the TechEmpower {@code World} table: id 1..10000 and a randomNumber 1..10000.
 * Serialized as {@code {"id":..,"randomNumber":..}}. (A plain class from before kiln's repaired
 * weaver, kilim-weaver/, made records safe in fiber code; it works as well.)
 */
@JsonPropertyOrder({"id", "randomNumber"})
public final class World {
    public final int id;
    public final int randomNumber;

    public World(int id, int randomNumber) {
        this.id = id;
        this.randomNumber = randomNumber;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof World && ((World) o).id == id && ((World) o).randomNumber == randomNumber;
    }

    @Override
    public int hashCode() {
        return 31 * id + randomNumber;
    }

    @Override
    public String toString() {
        return "World{id=" + id + ", randomNumber=" + randomNumber + '}';
    }
}
