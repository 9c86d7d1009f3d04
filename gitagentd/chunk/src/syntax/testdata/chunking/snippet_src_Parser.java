package demo;

import java.util.List;

/** A parser. */
public class Parser {
    private int limit;

    public Parser(int limit) {
        this.limit = limit;
    }

    /** Parses. */
    public List<String> parse(String text) {
        return List.of(text);
    }

    interface Visitor {
        void visit();
    }
}
