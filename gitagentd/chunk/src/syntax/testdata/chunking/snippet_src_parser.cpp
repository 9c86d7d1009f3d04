namespace demo {

class Parser {
public:
    int parse(const char *text) {
        return 0;
    }
};

template <typename T>
T identity(T value) {
    return value;
}

int Parser::count() const {
    return 1;
}

}
