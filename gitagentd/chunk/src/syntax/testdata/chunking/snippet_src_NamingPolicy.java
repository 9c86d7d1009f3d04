package demo;

/** How a field's name is written in JSON. */
public enum NamingPolicy implements Strategy {
  /** Keeps the field's name. */
  IDENTITY {
    @Override
    public String translate(String name) {
      return name;
    }
  },

  /** Upper-cases the first letter. */
  UPPER_FIRST() {
    @Override
    public String translate(String name) {
      return upperFirst(name);
    }

    @Override
    public String toString() {
      return "upper first, a policy whose body is long enough to be left out by the fast parse";
    }
  },
  PLAIN,
  LOUD("loud");

  NamingPolicy() {}

  NamingPolicy(String label) {}

  static String upperFirst(String s) {
    return s.isEmpty() ? s : Character.toUpperCase(s.charAt(0)) + s.substring(1);
  }
}
