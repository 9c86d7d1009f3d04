package demo

fun parseArgs(argv: Array<String>): List<String> {
    return argv.toList()
}

class Parser(val limit: Int) {
    fun parse(text: String): String {
        return text
    }

    companion object {
        fun create(): Parser = Parser(1)
    }
}
