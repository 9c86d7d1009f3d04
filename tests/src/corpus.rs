//! Generated trees the search benchmarks index and walk.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Sets a file's modification time an hour back, like files edited long
/// before the search (the daemon re-reads files changed within the last
/// two seconds of a read, whose timestamps cannot be trusted yet).
pub fn backdate(path: &Path) {
    let past = std::time::SystemTime::now() - Duration::from_secs(3600);
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_times(std::fs::FileTimes::new().set_modified(past).set_accessed(past)).unwrap();
}

/// A deterministic mixed tree: Go, Rust, Markdown and JSON files in
/// nested folders, with a .gitignore and ignored build output.
pub fn generate_tree(root: &Path) -> (usize, u64) {
    let mut files = 0;
    let mut bytes = 0u64;
    let mut write = |path: PathBuf, content: String| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        bytes += content.len() as u64;
        files += 1;
        std::fs::write(&path, content).unwrap();
        backdate(&path);
    };
    write(root.join(".gitignore"), "target/\n*.log\n".into());
    for module in 0..200 {
        for file in 0..20 {
            let dir = root.join(format!("module_{module:03}")).join(format!("pkg_{:02}", file % 5));
            let mut go = format!("package pkg{module}\n\nimport \"fmt\"\n\n");
            for function in 0..12 {
                let _ = write!(
                    go,
                    "// Handle{function} processes request {function} of module {module}.\nfunc Handle{module}_{file}_{function}(input string) (string, error) {{\n\tif input == \"\" {{\n\t\treturn \"\", fmt.Errorf(\"empty input for handler {function}\")\n\t}}\n\tresult := fmt.Sprintf(\"%s-{module}-{file}-{function}\", input)\n\treturn result, nil\n}}\n\n"
                );
            }
            write(dir.join(format!("handler_{file:02}.go")), go);
            let mut rust = String::from("//! Generated module for benchmarking.\n\n");
            for function in 0..10 {
                let _ = write!(
                    rust,
                    "/// Computes value {function}.\npub fn compute_{function}(values: &[u64]) -> u64 {{\n    values.iter().map(|v| v * {function} + {module}).sum()\n}}\n\n"
                );
            }
            write(dir.join(format!("compute_{file:02}.rs")), rust);
            if file % 4 == 0 {
                let mut doc = format!("# Module {module} notes {file}\n\n");
                for paragraph in 0..30 {
                    let _ = writeln!(
                        doc,
                        "Paragraph {paragraph} explains how module {module} wires handlers to the request router and what the retry policy does.\n"
                    );
                }
                write(dir.join(format!("NOTES_{file:02}.md")), doc);
                write(
                    dir.join(format!("config_{file:02}.json")),
                    format!("{{\"module\": {module}, \"file\": {file}, \"handlers\": 12, \"retries\": 3}}\n"),
                );
            }
        }
        write(root.join(format!("module_{module:03}/target/debug/build.log")), "ignored build output\n".repeat(100));
    }
    (files, bytes)
}
