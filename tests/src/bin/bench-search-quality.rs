//! Search quality of `git-agent search` on a real embeddings server.
//!
//!     cargo build --release --bins
//!     target/release/bench-search-quality <corpus.json> <embeddings-base-url> [options]
//!
//! The corpus is a JSON list of `{path, line, name, query, code}`: one
//! function each, with the query that should find it (typically its doc
//! comment, removed from `code`). The functions of one path are laid out in
//! one file, in corpus order by `line`, separated by a blank line (a `.go`
//! file starts with `package <folder>`, methods lifted out of a Java, C#,
//! TypeScript or PHP class go back into one, Java enum constants with a
//! class body into an enum); the
//! benchmark indexes that tree with the real binaries (an isolated user, as
//! in the other benchmarks), runs `git-agent search` once per query and
//! prints, at function level:
//!
//! - MRR@10, R@1 and R@10: a hit is a result whose line range overlaps the
//!   target function's lines;
//! - precise MRR@10: only results of which at least half the lines belong
//!   to the target function count (the function itself, not a window that
//!   happens to contain it);
//!
//! beside two baselines computed in the same run with the same server:
//! cosine between the bare query and each whole function, and BM25 over
//! whole functions. Nothing is printed as a silent 0: an unreachable
//! server, a failed search or an empty result list stops the benchmark.
//!
//! Options: `--model <name>` (default `all-MiniLM-L6-v2`), `--dimensions <n>`
//! (default: git-agent's default), `--queries <n>` (only the first n queries
//! of the corpus order, every function still laid out), `--functions <n>`
//! (only the first n functions of the corpus, laid out and queried: a
//! smaller, easier haystack for a quick look), `--env NAME=VALUE`
//! (passed to every `git-agent` run, repeatable), `--variant "NAME=VALUE ..."`
//! (every query once more with these variables, on the same index, e.g.
//! `GIT_AGENT_SEARCH_QUERY_FRAMING=off`; repeatable), `--dump <file>` (one
//! JSON line per query of the first setting: the query, the target's range,
//! its rank and the top 40 JSON results, to study what outranks it). The API key is read from
//! OPENAI_EMBEDDING_API_KEY (default `local`).

use git_agent_tests::TestEnv;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Results per query that count (MRR@10, R@10).
const DEPTH: usize = 10;
/// Results per query kept by `--dump` (the metrics still count [`DEPTH`]).
const DUMP_DEPTH: usize = 40;

/// One corpus entry.
#[derive(Debug, Clone)]
struct Function {
    path: String,
    line: u64,
    name: String,
    query: String,
    code: String,
}

/// Where a function landed in the laid-out tree (1-based, inclusive).
#[derive(Debug, Clone, PartialEq)]
struct Target {
    path: String,
    start: u32,
    end: u32,
}

/// One ranked result: a path and a 1-based inclusive line range.
#[derive(Debug, Clone, PartialEq)]
struct Range {
    path: String,
    start: u32,
    end: u32,
}

/// One search's results: their ranges, and the JSON results themselves
/// (for `--dump`).
struct Searched {
    ranges: Vec<Range>,
    results: Vec<Value>,
}

struct Options {
    corpus: String,
    base_url: String,
    model: String,
    dimensions: Option<usize>,
    queries: Option<usize>,
    functions: Option<usize>,
    env: Vec<(String, String)>,
    variants: Vec<Vec<(String, String)>>,
    dump: Option<String>,
}

fn main() {
    let options = parse_args(std::env::args().skip(1).collect()).unwrap_or_else(|message| {
        eprintln!("{message}");
        eprintln!(
            "usage: bench-search-quality <corpus.json> <embeddings-base-url> [--model <name>] [--dimensions <n>] [--queries <n>] [--functions <n>] [--env NAME=VALUE]... [--variant \"NAME=VALUE ...\"]..."
        );
        std::process::exit(2);
    });
    let mut corpus = load_corpus(&options.corpus);
    corpus.truncate(options.functions.unwrap_or(corpus.len()));
    let api_key = std::env::var("OPENAI_EMBEDDING_API_KEY").unwrap_or_else(|_| "local".into());
    let embedder = Embedder::new(&options.base_url, &api_key, &options.model, options.dimensions);
    // A missing server stops the run before anything is built.
    embedder.embed(&["probe".to_string()]);

    let mut env = TestEnv::new();
    env.set_env("OPENAI_EMBEDDING_BASE_URL", &options.base_url);
    env.set_env("OPENAI_EMBEDDING_API_KEY", &api_key);
    env.set_env("OPENAI_EMBEDDING_MODEL", &options.model);
    if let Some(dimensions) = options.dimensions {
        env.set_env("OPENAI_EMBEDDING_DIMENSIONS", &dimensions.to_string());
    }
    for (name, value) in &options.env {
        env.set_env(name, value);
    }
    let root = env.work().join("corpus");
    let (files, targets) = layout(&corpus);
    for (path, content) in &files {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().expect("a file has a folder")).expect("create the corpus folders");
        std::fs::write(&file, content).expect("write a corpus file");
        backdate(&file);
    }
    let queries = options.queries.unwrap_or(corpus.len()).min(corpus.len());
    println!(
        "== {}: {} functions in {} files, {} queries, model {} at {}{}",
        options.corpus,
        corpus.len(),
        files.len(),
        queries,
        options.model,
        options.base_url,
        if options.env.is_empty() {
            String::new()
        } else {
            format!(
                ", env {}",
                options.env.iter().map(|(name, value)| format!("{name}={value}")).collect::<Vec<_>>().join(" ")
            )
        }
    );

    let started = Instant::now();
    let index = git_agent(&env, &root, &["search", "--index"]);
    let index: Value = serde_json::from_str(&index).expect("`search --index` prints JSON");
    println!("git-agent index: {:.1} s ({})", started.elapsed().as_secs_f64(), index["retrieval"]);

    let started = Instant::now();
    let mut measured = Vec::new();
    let mut dump = Vec::new();
    for (number, variant) in std::iter::once(&Vec::new()).chain(&options.variants).enumerate() {
        let mut plain = Vec::with_capacity(queries);
        let mut precise = Vec::with_capacity(queries);
        for (function, target) in corpus.iter().zip(&targets).take(queries) {
            // A dump keeps deeper results, to study re-rankings offline.
            let limit = if options.dump.is_some() { DUMP_DEPTH } else { DEPTH };
            let searched = search(&env, &root, &function.query, variant, limit);
            let hit = first_hit(&searched.ranges, target, false);
            plain.push(hit);
            precise.push(first_hit(&searched.ranges, target, true));
            if number == 0 && options.dump.is_some() {
                dump.push(serde_json::json!({
                    "query": function.query,
                    "name": function.name,
                    "target": format!("{}:{}-{}", target.path, target.start, target.end),
                    "rank": hit,
                    "results": searched.results,
                }));
            }
        }
        let label = variant.iter().map(|(name, value)| format!("{name}={value}")).collect::<Vec<_>>().join(" ");
        measured.push((label, plain, precise));
    }
    let search_time = started.elapsed();
    if let Some(path) = &options.dump {
        let lines: Vec<String> = dump.iter().map(Value::to_string).collect();
        std::fs::write(path, lines.join("\n") + "\n").unwrap_or_else(|error| panic!("write {path}: {error}"));
    }

    let started = Instant::now();
    let codes: Vec<String> = corpus.iter().map(|function| function.code.clone()).collect();
    let function_vectors = embedder.embed(&codes);
    let query_texts: Vec<String> = corpus.iter().take(queries).map(|function| function.query.clone()).collect();
    let query_vectors = embedder.embed(&query_texts);
    let cosine: Vec<Option<usize>> =
        query_vectors.iter().enumerate().map(|(index, query)| cosine_rank(query, &function_vectors, index)).collect();
    let bm25_index = Bm25::new(&codes);
    let bm25: Vec<Option<usize>> =
        query_texts.iter().enumerate().map(|(index, query)| bm25_index.rank_of(query, index)).collect();
    let baseline_time = started.elapsed();

    println!(
        "git-agent search: {} queries x {} settings in {:.1} s; baselines: {:.1} s",
        queries,
        measured.len(),
        search_time.as_secs_f64(),
        baseline_time.as_secs_f64()
    );
    println!("{:<28} {:>7} {:>7} {:>7}", "", "MRR@10", "R@1", "R@10");
    let row = |name: &str, ranks: &[Option<usize>]| {
        let metrics = Metrics::of(ranks);
        println!("{name:<28} {:>7.3} {:>7.3} {:>7.3}", metrics.mrr, metrics.recall_1, metrics.recall_10);
    };
    for (label, plain, precise) in &measured {
        if !label.is_empty() {
            println!("with {label}:");
        }
        row("git-agent search", plain);
        row("git-agent search (precise)", precise);
    }
    row("cosine, whole functions", &cosine);
    row("BM25, whole functions", &bm25);
}

fn parse_args(args: Vec<String>) -> Result<Options, String> {
    let mut positional = Vec::new();
    let mut options = Options {
        corpus: String::new(),
        base_url: String::new(),
        model: "all-MiniLM-L6-v2".into(),
        dimensions: None,
        queries: None,
        functions: None,
        env: Vec::new(),
        variants: Vec::new(),
        dump: None,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--model" => options.model = value("--model")?,
            "--dimensions" => {
                options.dimensions =
                    Some(value("--dimensions")?.parse().map_err(|_| "--dimensions takes a positive number")?)
            }
            "--queries" => {
                options.queries = Some(value("--queries")?.parse().map_err(|_| "--queries takes a positive number")?)
            }
            "--functions" => {
                options.functions =
                    Some(value("--functions")?.parse().map_err(|_| "--functions takes a positive number")?)
            }
            "--env" => options.env.push(assignment(&value("--env")?)?),
            "--dump" => options.dump = Some(value("--dump")?),
            "--variant" => options
                .variants
                .push(value("--variant")?.split_whitespace().map(assignment).collect::<Result<Vec<_>, String>>()?),
            other if other.starts_with("--") => return Err(format!("unknown option {other}")),
            _ => positional.push(arg),
        }
    }
    let [corpus, base_url]: [String; 2] =
        positional.try_into().map_err(|_| "expected a corpus file and an embeddings base URL".to_string())?;
    options.corpus = corpus;
    options.base_url = base_url.trim_end_matches('/').to_string();
    Ok(options)
}

fn assignment(pair: &str) -> Result<(String, String), String> {
    let (name, value) = pair.split_once('=').ok_or_else(|| format!("expected NAME=VALUE, got {pair:?}"))?;
    Ok((name.to_string(), value.to_string()))
}

fn load_corpus(path: &str) -> Vec<Function> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("read the corpus {path}: {error}"));
    let entries: Vec<Value> =
        serde_json::from_str(&text).unwrap_or_else(|error| panic!("the corpus {path} is not a JSON list: {error}"));
    assert!(!entries.is_empty(), "the corpus {path} has no functions");
    entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let field = |name: &str| {
                entry[name]
                    .as_str()
                    .unwrap_or_else(|| panic!("corpus entry {index} has no string {name:?}"))
                    .to_string()
            };
            let function = Function {
                path: field("path"),
                line: entry["line"].as_u64().unwrap_or_else(|| panic!("corpus entry {index} has no number \"line\"")),
                name: entry["name"].as_str().unwrap_or_default().to_string(),
                query: field("query"),
                code: field("code"),
            };
            assert!(
                !function.query.trim().is_empty() && !function.code.trim().is_empty(),
                "corpus entry {index} has an empty query or code"
            );
            function
        })
        .collect()
}

/// The files of the corpus (path -> content) and every function's lines,
/// in corpus order. Functions of one path follow each other by `line`
/// (corpus order among equal lines), one blank line apart, after the
/// file's [`preamble`]; runs of methods lifted out of their class (see
/// [`is_member`]) are put back into a class named after the file, so
/// that the laid-out file is valid source in its language.
fn layout(corpus: &[Function]) -> (BTreeMap<String, String>, Vec<Target>) {
    let mut by_path: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, function) in corpus.iter().enumerate() {
        by_path.entry(&function.path).or_default().push(index);
    }
    let mut files = BTreeMap::new();
    let mut targets = vec![None; corpus.len()];
    for (path, mut members) in by_path {
        members.sort_by_key(|&index| corpus[index].line);
        let mut content = preamble(path);
        let mut enclosing = None;
        for index in members {
            let code = corpus[index].code.trim_end_matches('\n');
            let member = is_member(path, code);
            let constant = member && is_enum_constant(path, code);
            match enclosing {
                None if constant => {
                    content.push_str(&format!("enum {} {{\n\n", class_name(path)));
                    enclosing = Some(Enclosing::EnumConstants);
                }
                None if member => {
                    content.push_str(&format!("class {} {{\n\n", class_name(path)));
                    enclosing = Some(Enclosing::Class);
                }
                Some(Enclosing::EnumConstants) if member && !constant => {
                    // The constants end before the enum's other members.
                    content.push_str(";\n\n");
                    enclosing = Some(Enclosing::EnumMembers);
                }
                Some(_) if !member => {
                    content.push_str("}\n\n");
                    enclosing = None;
                }
                _ => {}
            }
            let next_line = 1 + content.lines().count() as u32;
            let lines = code.lines().count().max(1) as u32;
            targets[index] = Some(Target { path: path.to_string(), start: next_line, end: next_line + lines - 1 });
            content.push_str(code);
            content.push_str("\n\n");
        }
        if enclosing.is_some() {
            content.push_str("}\n");
        }
        files.insert(path.to_string(), content);
    }
    (files, targets.into_iter().map(|target| target.expect("every function is laid out")).collect())
}

/// What the lifted members of a laid-out file are put back into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Enclosing {
    Class,
    /// An enum, still at its constants.
    EnumConstants,
    /// An enum, past its constants (the `;` is written).
    EnumMembers,
}

/// What a file needs before its functions to be source in its language:
/// a Go file's package clause (`package <folder>` and a blank line), a
/// PHP file's `<?php` tag; nothing for others.
fn preamble(path: &str) -> String {
    if path.ends_with(".php") {
        return "<?php\n\n".into();
    }
    if !path.ends_with(".go") {
        return String::new();
    }
    let folder = Path::new(path).parent().and_then(|folder| folder.file_name()).and_then(|name| name.to_str());
    let name: String = folder.unwrap_or("main").chars().filter(|ch| ch.is_ascii_alphanumeric() || *ch == '_').collect();
    let name = if name.is_empty() || name.starts_with(|ch: char| ch.is_ascii_digit()) { "main".into() } else { name };
    format!("package {name}\n\n")
}

/// Whether `code` is a method that only parses inside a class: every
/// Java and C# function; a JavaScript/TypeScript or PHP function that
/// does not start like a top-level item (`export`, `function`, `const`,
/// ...), e.g. `private parse(c: number)` or `resume(): void {`.
fn is_member(path: &str, code: &str) -> bool {
    let extension = path.rsplit_once('.').map_or("", |(_, extension)| extension);
    let first = first_code_line(code);
    let starts = |prefixes: &[&str]| prefixes.iter().any(|prefix| first.starts_with(prefix));
    match extension {
        "java" | "cs" => true,
        "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs" => !starts(&[
            "export ",
            "function ",
            "function*",
            "async function",
            "const ",
            "let ",
            "var ",
            "class ",
            "abstract class",
            "interface ",
            "type ",
            "enum ",
            "declare ",
            "namespace ",
            "module ",
            "import ",
        ]),
        "php" => starts(&["public ", "private ", "protected ", "static ", "abstract ", "final "]),
        _ => false,
    }
}

/// The first line of `code` that is neither blank, an annotation nor a
/// comment, trimmed.
fn first_code_line(code: &str) -> &str {
    code.lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with('@') && !line.starts_with("//") && !line.starts_with("/*"))
        .unwrap_or("")
}

/// Whether `code` is a Java enum constant with a class body
/// (`UPPER_CAMEL_CASE() {` or `IDENTITY {`), which only parses inside an
/// enum, before the enum's other members.
fn is_enum_constant(path: &str, code: &str) -> bool {
    if !path.ends_with(".java") {
        return false;
    }
    let first = first_code_line(code);
    let name_end =
        first.find(|ch: char| !(ch.is_ascii_uppercase() || ch.is_ascii_digit() || ch == '_')).unwrap_or(first.len());
    let (name, rest) = first.split_at(name_end);
    let rest = rest.trim();
    name.starts_with(|ch: char| ch.is_ascii_uppercase())
        && rest.ends_with('{')
        && (rest == "{" || rest.starts_with('('))
}

/// The class lifted methods are put back into: the file's name in
/// PascalCase (`tokenizer.ts` -> `Tokenizer`, `json_reader.java` ->
/// `JsonReader`).
fn class_name(path: &str) -> String {
    let stem = Path::new(path).file_stem().and_then(|stem| stem.to_str()).unwrap_or("Members");
    let name: String = stem
        .split(|ch: char| !ch.is_ascii_alphanumeric())
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or(String::new(), |first| first.to_ascii_uppercase().to_string() + chars.as_str())
        })
        .collect();
    if name.is_empty() || name.starts_with(|ch: char| ch.is_ascii_digit()) { "Members".into() } else { name }
}

/// The 1-based rank of the first result within [`DEPTH`] that hits
/// `target`: overlapping it, or with `precise`, also having at least half
/// its own lines inside it.
fn first_hit(results: &[Range], target: &Target, precise: bool) -> Option<usize> {
    results
        .iter()
        .take(DEPTH)
        .position(|result| {
            if result.path != target.path || result.start > target.end || target.start > result.end {
                return false;
            }
            let overlap = result.end.min(target.end) - result.start.max(target.start) + 1;
            let length = result.end - result.start + 1;
            !precise || overlap * 2 >= length
        })
        .map(|position| position + 1)
}

#[derive(Debug, PartialEq)]
struct Metrics {
    mrr: f64,
    recall_1: f64,
    recall_10: f64,
}

impl Metrics {
    fn of(ranks: &[Option<usize>]) -> Self {
        assert!(!ranks.is_empty(), "no queries were measured");
        let count = ranks.len() as f64;
        let within = |depth: usize| ranks.iter().filter(|rank| rank.is_some_and(|rank| rank <= depth)).count() as f64;
        Self {
            mrr: ranks
                .iter()
                .filter_map(|rank| rank.filter(|rank| *rank <= DEPTH))
                .map(|rank| 1.0 / rank as f64)
                .sum::<f64>()
                / count,
            recall_1: within(1) / count,
            recall_10: within(DEPTH) / count,
        }
    }
}

/// Runs `git-agent <args>` in `dir` and returns its stdout; a failure
/// stops the benchmark with its stderr.
fn git_agent(env: &TestEnv, dir: &Path, args: &[&str]) -> String {
    let output = env.git_agent_in(dir, args).stderr(Stdio::piped()).output().expect("run git-agent");
    assert!(
        output.status.success(),
        "git-agent {:?} failed ({}):\n{}",
        args.iter().take(6).collect::<Vec<_>>(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The top results of `git-agent search` for `query`, every result kept
/// (the lowest accepted --min-score).
fn search(env: &TestEnv, root: &Path, query: &str, variables: &[(String, String)], limit: usize) -> Searched {
    let limit = limit.to_string();
    let args = ["search", "--format", "json", "--limit", &limit, "--min-score", "0.000000001", "--", query];
    let mut command = env.git_agent_in(root, &args);
    command.envs(variables.iter().map(|(name, value)| (name, value)));
    let output = command.stderr(Stdio::piped()).output().expect("run git-agent");
    assert!(
        output.status.success(),
        "git-agent search {query:?} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let output: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("search output: {error}\n{stdout}"));
    let results =
        output["results"].as_array().unwrap_or_else(|| panic!("search output has no results list:\n{stdout}"));
    assert!(!results.is_empty(), "git-agent search returned no results for {query:?}:\n{stdout}");
    let ranges = results
        .iter()
        .map(|result| {
            let range = result["range"].as_str().unwrap_or_else(|| panic!("a result without a range:\n{stdout}"));
            parse_range(range).unwrap_or_else(|| panic!("unreadable result range {range:?}"))
        })
        .collect();
    Searched { ranges, results: results.clone() }
}

/// `path:start-end` of a JSON result.
fn parse_range(range: &str) -> Option<Range> {
    let (path, lines) = range.rsplit_once(':')?;
    let (start, end) = lines.split_once('-')?;
    Some(Range { path: path.to_string(), start: start.parse().ok()?, end: end.parse().ok()? })
}

/// The 1-based rank of function `target` among all functions by cosine to
/// `query`, when within [`DEPTH`].
fn cosine_rank(query: &[f32], functions: &[Vec<f32>], target: usize) -> Option<usize> {
    let scores: Vec<f64> = functions.iter().map(|function| cosine(query, function)).collect();
    rank_of(&scores, target)
}

/// The 1-based rank of `target` by descending score (ties go against it),
/// when within [`DEPTH`].
fn rank_of(scores: &[f64], target: usize) -> Option<usize> {
    let better =
        scores.iter().enumerate().filter(|&(index, score)| index != target && *score >= scores[target]).count();
    (better < DEPTH).then_some(better + 1)
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt();
    let denominator = norm(a) * norm(b);
    if denominator == 0.0 { 0.0 } else { dot / denominator }
}

/// BM25 (k1 1.2, b 0.75) over whole functions, with git-agent's terms
/// (letter/digit runs, lower-cased, split at camelCase).
struct Bm25 {
    documents: Vec<HashMap<String, u32>>,
    lengths: Vec<f64>,
    average: f64,
    frequency: HashMap<String, usize>,
}

impl Bm25 {
    fn new(documents: &[String]) -> Self {
        let documents: Vec<HashMap<String, u32>> = documents
            .iter()
            .map(|text| {
                let mut counts = HashMap::new();
                for term in terms(text) {
                    *counts.entry(term).or_insert(0) += 1;
                }
                counts
            })
            .collect();
        let lengths: Vec<f64> = documents.iter().map(|counts| f64::from(counts.values().sum::<u32>())).collect();
        let average = (lengths.iter().sum::<f64>() / lengths.len().max(1) as f64).max(1.0);
        let mut frequency = HashMap::new();
        for counts in &documents {
            for term in counts.keys() {
                *frequency.entry(term.clone()).or_insert(0) += 1;
            }
        }
        Self { documents, lengths, average, frequency }
    }

    fn scores(&self, query: &str) -> Vec<f64> {
        let mut query_terms = terms(query);
        query_terms.sort();
        query_terms.dedup();
        let total = self.documents.len() as f64;
        self.documents
            .iter()
            .zip(&self.lengths)
            .map(|(counts, length)| {
                query_terms
                    .iter()
                    .filter_map(|term| {
                        let count = f64::from(*counts.get(term)?);
                        let df = self.frequency[term] as f64;
                        let idf = (1.0 + (total - df + 0.5) / (df + 0.5)).ln();
                        Some(idf * count * 2.2 / (count + 1.2 * (0.25 + 0.75 * length / self.average)))
                    })
                    .sum()
            })
            .collect()
    }

    fn rank_of(&self, query: &str, target: usize) -> Option<usize> {
        rank_of(&self.scores(query), target)
    }
}

fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut previous: Option<char> = None;
    for ch in text.chars() {
        if ch.is_alphanumeric() {
            if ch.is_uppercase() && previous.is_some_and(|prev| prev.is_lowercase() || prev.is_numeric()) {
                out.push(std::mem::take(&mut current));
            }
            current.extend(ch.to_lowercase());
            previous = Some(ch);
        } else {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            previous = None;
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Calls `POST <base>/embeddings` for the baselines.
struct Embedder {
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
    url: String,
    api_key: String,
    model: String,
    dimensions: Option<usize>,
}

impl Embedder {
    fn new(base_url: &str, api_key: &str, model: &str, dimensions: Option<usize>) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
        // reqwest is built without a bundled TLS provider (as the daemon's).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder().timeout(Duration::from_secs(600)).build().expect("an HTTP client");
        Self {
            runtime,
            client,
            url: format!("{base_url}/embeddings"),
            api_key: api_key.into(),
            model: model.into(),
            dimensions,
        }
    }

    /// One vector per text, in order, in batches of 64.
    fn embed(&self, texts: &[String]) -> Vec<Vec<f32>> {
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(64) {
            let mut body = serde_json::json!({"model": self.model, "input": batch});
            if let Some(dimensions) = self.dimensions {
                body["dimensions"] = dimensions.into();
            }
            let response: Value = self.runtime.block_on(async {
                let response =
                    self.client.post(&self.url).bearer_auth(&self.api_key).json(&body).send().await.unwrap_or_else(
                        |error| panic!("the embeddings server at {} does not answer: {error}", self.url),
                    );
                let status = response.status();
                let text = response.text().await.unwrap_or_default();
                assert!(status.is_success(), "the embeddings server at {} answered {status}: {text}", self.url);
                serde_json::from_str(&text).unwrap_or_else(|error| panic!("unreadable embeddings response: {error}"))
            });
            let mut data: Vec<&Value> =
                response["data"].as_array().expect("the embeddings response has a data list").iter().collect();
            assert_eq!(data.len(), batch.len(), "the embeddings server returned the wrong number of vectors");
            data.sort_by_key(|item| item["index"].as_u64().unwrap_or(0));
            for item in data {
                let vector: Vec<f32> = item["embedding"]
                    .as_array()
                    .expect("an embedding is a list")
                    .iter()
                    .map(|value| value.as_f64().expect("an embedding holds numbers") as f32)
                    .collect();
                assert!(vector.iter().any(|value| *value != 0.0), "the embeddings server returned a zero vector");
                vectors.push(vector);
            }
        }
        vectors
    }
}

/// Sets a file's modification time an hour back, so the daemon trusts its
/// timestamp (see bench-search).
fn backdate(path: &Path) {
    let past = std::time::SystemTime::now() - Duration::from_secs(3600);
    let file = std::fs::File::options().write(true).open(path).expect("open a corpus file");
    file.set_times(std::fs::FileTimes::new().set_modified(past).set_accessed(past)).expect("backdate a corpus file");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function(path: &str, line: u64, code: &str) -> Function {
        Function { path: path.into(), line, name: String::new(), query: "q".into(), code: code.into() }
    }

    #[test]
    fn functions_of_one_path_are_laid_out_in_line_order() {
        let corpus = [
            function("a.py", 30, "def b():\n    pass\n"),
            function("b.py", 1, "def c(): pass"),
            function("a.py", 10, "def a():\n    return 1"),
        ];
        let (files, targets) = layout(&corpus);
        assert_eq!(files["a.py"], "def a():\n    return 1\n\ndef b():\n    pass\n\n");
        assert_eq!(targets[2], Target { path: "a.py".into(), start: 1, end: 2 });
        assert_eq!(targets[0], Target { path: "a.py".into(), start: 4, end: 5 });
        assert_eq!(targets[1], Target { path: "b.py".into(), start: 1, end: 1 });
        // Go files get their package clause first.
        let (files, targets) = layout(&[function("gin/render/json.go", 5, "func A() {\n}")]);
        assert_eq!(files["gin/render/json.go"], "package render\n\nfunc A() {\n}\n\n");
        assert_eq!(targets[0], Target { path: "gin/render/json.go".into(), start: 3, end: 4 });
        assert_eq!(preamble("cobra.go"), "package main\n\n");
        // Lifted methods go back into a class named after the file.
        let (files, targets) = layout(&[
            function("src/json_reader.ts", 1, "export function a() {}"),
            function("src/json_reader.ts", 2, "private b(): void {\n}"),
            function("src/json_reader.ts", 3, "@Decorated\nc() {}"),
            function("src/json_reader.ts", 4, "const d = 1"),
        ]);
        assert_eq!(
            files["src/json_reader.ts"],
            "export function a() {}\n\nclass JsonReader {\n\nprivate b(): void {\n}\n\n@Decorated\nc() {}\n\n}\n\nconst d = 1\n\n"
        );
        assert_eq!(targets[1], Target { path: "src/json_reader.ts".into(), start: 5, end: 6 });
        assert_eq!(targets[2], Target { path: "src/json_reader.ts".into(), start: 8, end: 9 });
        assert_eq!(targets[3], Target { path: "src/json_reader.ts".into(), start: 13, end: 13 });
        let (files, targets) = layout(&[function("a/Gson.java", 1, "public int x() {\n  return 1;\n}")]);
        assert_eq!(files["a/Gson.java"], "class Gson {\n\npublic int x() {\n  return 1;\n}\n\n}\n");
        assert_eq!(targets[0], Target { path: "a/Gson.java".into(), start: 3, end: 5 });
        // Enum constants with bodies go back into an enum, before its
        // other members.
        let (files, targets) = layout(&[
            function("a/Policy.java", 1, "IDENTITY {\n  int x() { return 1; }\n},"),
            function("a/Policy.java", 5, "@Deprecated\nUPPER_FIRST(2) {\n  int x() { return 2; }\n},"),
            function("a/Policy.java", 9, "static int y() {\n  return 3;\n}"),
        ]);
        assert_eq!(
            files["a/Policy.java"],
            "enum Policy {\n\nIDENTITY {\n  int x() { return 1; }\n},\n\n@Deprecated\nUPPER_FIRST(2) {\n  int x() { return 2; }\n},\n\n;\n\nstatic int y() {\n  return 3;\n}\n\n}\n"
        );
        assert_eq!(targets[1], Target { path: "a/Policy.java".into(), start: 7, end: 10 });
        assert_eq!(targets[2], Target { path: "a/Policy.java".into(), start: 14, end: 16 });
        assert!(!is_enum_constant("a/Url.java", "URL parse() {"));
        assert!(!is_enum_constant("a/Policy.ts", "IDENTITY {"));
    }

    #[test]
    fn hits_overlap_and_precise_hits_are_mostly_the_function() {
        let target = Target { path: "a.py".into(), start: 10, end: 19 };
        let range = |path: &str, start, end| Range { path: path.into(), start, end };
        let results = [
            range("b.py", 10, 19), // other file
            range("a.py", 1, 9),   // just before
            range("a.py", 1, 40),  // contains it, 10 of 40 lines
            range("a.py", 15, 22), // 5 of 8 lines inside
        ];
        assert_eq!(first_hit(&results, &target, false), Some(3));
        assert_eq!(first_hit(&results, &target, true), Some(4));
        assert_eq!(first_hit(&results[..2], &target, false), None);
        let deep: Vec<Range> = (0..12).map(|_| range("b.py", 1, 1)).chain([range("a.py", 10, 19)]).collect();
        assert_eq!(first_hit(&deep, &target, false), None, "only the first ten results count");
    }

    #[test]
    fn metrics_average_reciprocal_ranks() {
        let metrics = Metrics::of(&[Some(1), Some(2), None, Some(10)]);
        assert!((metrics.mrr - (1.0 + 0.5 + 0.1) / 4.0).abs() < 1e-12);
        assert_eq!((metrics.recall_1, metrics.recall_10), (0.25, 0.75));
        assert!(std::panic::catch_unwind(|| Metrics::of(&[])).is_err(), "no queries is not a 0");
    }

    #[test]
    fn baselines_rank_the_target_with_ties_against_it() {
        assert_eq!(rank_of(&[0.5, 0.9, 0.5], 0), Some(3));
        assert_eq!(rank_of(&[0.9, 0.5], 0), Some(1));
        let bm25 = Bm25::new(&["def parse_header(line)".into(), "def write_body(out)".into()]);
        assert_eq!(bm25.rank_of("Parse a header line", 0), Some(1));
        assert_eq!(bm25.rank_of("write the body", 1), Some(1));
        assert_eq!(terms("parseHTTP v2Value"), ["parse", "http", "v2", "value"]);
    }

    #[test]
    fn ranges_and_arguments_parse() {
        assert_eq!(parse_range("src/a:b.rs:3-9"), Some(Range { path: "src/a:b.rs".into(), start: 3, end: 9 }));
        assert_eq!(parse_range("a.rs"), None);
        let options = parse_args(
            ["c.json", "http://127.0.0.1:1/v1/", "--queries", "5", "--env", "A=b=c", "--variant", "X=1 Y=2"]
                .map(String::from)
                .to_vec(),
        )
        .unwrap();
        assert_eq!(options.variants, [[("X".to_string(), "1".to_string()), ("Y".to_string(), "2".to_string())]]);
        assert_eq!((options.base_url.as_str(), options.queries), ("http://127.0.0.1:1/v1", Some(5)));
        assert_eq!(options.env, [("A".to_string(), "b=c".to_string())]);
        assert!(parse_args(vec!["c.json".into()]).is_err());
    }
}
