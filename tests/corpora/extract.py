#!/usr/bin/env python3
"""Builds a search-quality corpus (bench-search-quality's JSON list of
{path, line, name, query, code}) from the doc comments of a Git checkout.

    extract.py <language: rust|go|ts|java> <git-dir> <commit> <source-label> [max] > corpus.json

Each documented function (Rust `///`, Go `//`, JSDoc/Javadoc `/** */`)
gives one entry: the query is the comment's first paragraph (for Go
without the leading function name), the code is the function with its
comment removed. Test files and functions outside 3..80 lines are left
out; with more than `max` (default 300) functions, an evenly spaced
sample is kept. Read from the commit with `git show`, nothing else.
"""
import json, re, subprocess, sys

EXT = {"rust": (".rs",), "go": (".go",), "ts": (".ts", ".tsx"), "java": (".java",)}


def files(git_dir, commit, language):
    out = subprocess.run(["git", "-C", git_dir, "ls-tree", "-r", "--name-only", commit],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    for path in out:
        if not path.endswith(EXT[language]) or path.endswith(".d.ts"):
            continue
        low = path.lower()
        if re.search(r"(^|/)(tests?|__tests__|testdata|benches|examples?|fixtures?)/", low) or \
                re.search(r"(_test\.go|\.spec\.tsx?|\.test\.tsx?|test\.java)$", low):
            continue
        text = subprocess.run(["git", "-C", git_dir, "show", f"{commit}:{path}"],
                              capture_output=True, text=True, errors="replace").stdout
        yield path, text


def body_end(lines, start, language):
    """Index of the line closing the body's `{` block from `start`, or None
    (a declaration without a body, or unbalanced). Before the body, braces
    inside brackets (`options: { a: T }` in a parameter list, TypeScript
    `Promise<{ a: T }>`) and type
    braces (a TypeScript `): { a: T } {` return type) are part of the
    signature, not the body. (A Go function returning `interface{}` still
    ends at that brace: one line, so it is left out, never cut short.)"""
    depth, opened = 0, False
    # Before the body: open `(`/`[` and signature braces, innermost last.
    signature = []
    # The signature text read so far, to tell a type brace from the body.
    before = ""
    for index in range(start, min(len(lines), start + 120)):
        line = lines[index]
        i = 0
        while i < len(line):
            c = line[i]
            two = line[i:i + 2]
            if two == "//":
                break
            if c in "\"`" or (c == "'" and language != "rust"):
                q = c
                i += 1
                while i < len(line) and line[i] != q:
                    i += 2 if line[i] == "\\" else 1
            elif c == "'" and language == "rust":
                if line[i + 1:i + 2] == "\\":
                    j = line.find("'", i + 2)
                    i = j if j > 0 else i
                elif line[i + 2:i + 3] == "'":
                    i += 2
            elif not opened and (c in "([" or (c == "<" and language == "ts")):
                signature.append(c)
            elif not opened and c in ")]" and signature and signature[-1] in "([":
                signature.pop()
            elif not opened and c == ">" and signature and signature[-1] == "<" and line[i - 1] != "=":
                signature.pop()
            elif not opened and c == "{" and (signature or type_brace(before, language)):
                signature.append(c)
            elif not opened and c == "}" and signature and signature[-1] == "{":
                signature.pop()
            elif c == "{":
                depth += 1
                opened = True
            elif c == "}":
                depth -= 1
                if opened and depth == 0:
                    return index
            elif c == ";" and not opened and not signature and language in ("rust", "java", "ts"):
                return None
            if not opened:
                before += c
            i += 1
        before += " "
    return None


def type_brace(before, language):
    """Whether a `{` after the signature text `before` (outside brackets)
    opens a type, not the body: after a TypeScript `:` (an object return
    type)."""
    return language == "ts" and before.rstrip().endswith(":")


def doc_paragraph(comment_lines):
    words = []
    for text in comment_lines:
        text = text.strip()
        if text.startswith("@") or text.startswith("#"):
            break
        if not text:
            if words:
                break
            continue
        words.append(text)
    query = " ".join(words)
    query = re.sub(r"\{@\w+\s+([^}]*)\}", r"\1", query)  # Javadoc {@code x}, JSDoc {@link x}
    query = re.sub(r"<[^>]+>", "", query)  # HTML tags
    return re.sub(r"\s+", " ", query).strip()


FN = {
    "rust": re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+\"[^\"]*\"\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)"),
    "go": re.compile(r"^func\s+(\([^)]*\)\s*)?([A-Za-z_][A-Za-z0-9_]*)"),
    "ts": re.compile(r"^\s*(export\s+)?(default\s+)?(declare\s+)?(async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)|"
                     r"^\s*(public\s+|private\s+|protected\s+|static\s+|async\s+|readonly\s+)*([A-Za-z_$][\w$]*)\s*(<[^>]*>)?\s*\([^;]*$|"
                     r"^\s*(export\s+)?const\s+([A-Za-z_$][\w$]*)\s*(:[^=]*)?=\s*(async\s+)?(\([^)]*\)|[A-Za-z_$][\w$]*)\s*(:[^=]*)?=>"),
    "java": re.compile(r"^\s*((public|private|protected|static|final|abstract|synchronized|native|default)\s+)*(<[^>]+>\s+)?[\w<>\[\],.? ]+\s+([a-zA-Z_]\w*)\s*\("),
}
KEYWORDS = {"if", "for", "while", "switch", "return", "catch", "function", "new", "else", "constructor"}


def fn_name(line, language):
    m = FN[language].match(line)
    if not m:
        return None
    groups = [g for g in m.groups() if g]
    if language == "rust":
        return m.group(7)
    if language == "go":
        return m.group(2)
    if language == "java":
        return m.group(4) if m.group(4) not in KEYWORDS else None
    name = m.group(5) or m.group(7) or m.group(10)
    return name if name and name not in KEYWORDS else None


def extract(path, text, language):
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        comment, start = None, i
        if language in ("rust", "go") and line.startswith("//") and not line.startswith("////"):
            marker = "///" if language == "rust" else "//"
            if not line.startswith(marker) or (language == "rust" and line.startswith("//!")):
                i += 1
                continue
            comment = []
            while i < len(lines) and lines[i].strip().startswith(marker):
                comment.append(lines[i].strip()[len(marker):])
                i += 1
        elif language in ("ts", "java") and line.startswith("/**"):
            comment = []
            while i < len(lines):
                body = lines[i].strip()
                end = "*/" in body
                body = body.split("*/")[0]
                body = re.sub(r"^/\*\*|^\*", "", body)
                comment.append(body)
                i += 1
                if end:
                    break
        else:
            i += 1
            continue
        # Attributes / annotations / decorators between the comment and the function.
        decl = i
        while decl < len(lines) and re.match(r"^\s*(#\[|@\w)", lines[decl]):
            decl += 1
        if decl >= len(lines):
            break
        name = fn_name(lines[decl], language)
        if not name:
            continue
        end = body_end(lines, decl, language)
        if end is None:
            continue
        code_lines = lines[i:end + 1]
        if not 3 <= len(code_lines) <= 80:
            continue
        indent = min((len(l) - len(l.lstrip()) for l in code_lines if l.strip()), default=0)
        code = "\n".join(l[indent:] for l in code_lines)
        query = doc_paragraph(comment)
        if language == "go":
            first, _, rest = query.partition(" ")
            if first in (name, "A", "An", "The") and first == name and rest:
                query = rest[0].upper() + rest[1:]
        if len(query) < 20 or len(query.split()) < 4:
            continue
        yield {"path": path, "line": start + 1, "name": name, "query": query, "code": code}
        i = end + 1


def main():
    language, git_dir, commit, label = sys.argv[1:5]
    limit = int(sys.argv[5]) if len(sys.argv) > 5 else 300
    entries, seen = [], set()
    for path, text in files(git_dir, commit, language):
        for entry in extract(path, text, language):
            if entry["query"] in seen:
                continue
            seen.add(entry["query"])
            entries.append(entry)
    if len(entries) > limit:
        step = len(entries) / limit
        entries = [entries[int(k * step)] for k in range(limit)]
    for entry in entries:
        entry["path"] = f"{label}/{entry['path']}"
    print(json.dumps(entries, indent=0))
    print(f"{language}: {len(entries)} functions from {label} at {commit}", file=sys.stderr)


main()
