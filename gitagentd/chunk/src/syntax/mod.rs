//! The declarations of a source file, found with tree-sitter: for each
//! language whose `lang-*` feature is on, which syntax nodes are
//! declarations (functions, methods, types, constants), which contain
//! members (classes, impls, traits, interfaces), which wrap a declaration
//! (decorators, `export`, templates) and which only group top-level items
//! (namespaces, modules). Markdown has no grammar here: [`markdown`] cuts
//! it at its headings.
//!
//! Every file is parsed whole. Only the top of the tree is visited: the
//! root's children, and the members of containers and namespaces, with
//! one cursor; bodies are never walked. Each thread keeps one parser per
//! language.
//!
//! A file whose root has a syntax error among its direct children, that
//! the parser gives up on, or without any declaration has no outline: the
//! caller keeps line windows. A declaration with a syntax error inside is
//! left out (its lines fall between declarations).
//! This module never decides chunk sizes; [`super::chunking`] does.

mod grammars;
pub mod markdown;

use grammars::Grammar;
#[cfg(feature = "syntax")]
use grammars::Role;

/// One declaration of a file, as lines (1-based, inclusive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decl {
    pub kind: &'static str,
    pub name: String,
    /// The lines this declaration's own chunk covers: the whole
    /// declaration with the comments right above it, or for a container
    /// with members, its header (up to its first member).
    pub start_line: usize,
    pub end_line: usize,
    /// The line the declaration itself starts on (after its comments).
    pub signature_line: usize,
    /// For a container: its last line (members and all).
    pub scope_end: usize,
    /// The container this declaration is a member of.
    pub parent: Option<usize>,
    /// Whether members were found inside (a container's header chunk).
    pub container: bool,
}

/// The declarations of a file, containers before their members.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outline {
    pub decls: Vec<Decl>,
}

/// The embedding header's language label of a path's syntax, when a
/// grammar for it is built in.
pub fn language_label(path: &str) -> Option<&'static str> {
    grammars::for_path(path).map(|grammar| grammar.label)
}

/// The labels of the grammars built in, in a fixed order (part of the
/// chunker version).
pub fn built_in_labels() -> Vec<&'static str> {
    grammars::all().iter().map(|grammar| grammar.feature).collect()
}

/// The outline of `text` (normalized) read from `path`, from a parse of
/// the whole file; `None` when no grammar handles the path or the file
/// does not parse.
pub fn outline(path: &str, text: &str) -> Option<Outline> {
    let grammar = grammars::for_path(path)?;
    parse_outline(grammar, text)
}

#[cfg(feature = "syntax")]
fn parse_outline(grammar: &'static Grammar, text: &str) -> Option<Outline> {
    let tree = parse_tree(grammar, text)?;
    let root = tree.root_node();
    if root.has_error() {
        let mut cursor = root.walk();
        if root.named_children(&mut cursor).any(|child| child.is_error() || child.is_missing()) {
            return None;
        }
    }
    let mut walker = Walker { grammar, source: text.as_bytes(), decls: Vec::new() };
    walker.members(root, None, "", 0);
    if walker.decls.is_empty() {
        return None;
    }
    Some(Outline { decls: walker.decls })
}

/// The tree of `text`, with this thread's parser for the grammar.
#[cfg(feature = "syntax")]
fn parse_tree(grammar: &'static Grammar, text: &str) -> Option<tree_sitter::Tree> {
    use std::cell::RefCell;
    thread_local! {
        static PARSERS: RefCell<Vec<(&'static str, tree_sitter::Parser)>> = const { RefCell::new(Vec::new()) };
    }
    use_the_daemon_allocator();
    PARSERS.with(|parsers| {
        let mut parsers = parsers.borrow_mut();
        let position = match parsers.iter().position(|(label, _)| *label == grammar.feature) {
            Some(position) => position,
            None => {
                let mut parser = tree_sitter::Parser::new();
                parser.set_language(&(grammar.language)()).ok()?;
                parsers.push((grammar.feature, parser));
                parsers.len() - 1
            }
        };
        let parser = &mut parsers[position].1;
        let tree = parser.parse(text, None);
        if tree.is_none() {
            parser.reset();
        }
        tree
    })
}

// The C allocator of the daemon's Rust allocator (see `main.rs` and
// `memory.rs`), linked through the `mimalloc` crate.
#[cfg(feature = "syntax")]
extern crate mimalloc;
#[cfg(feature = "syntax")]
unsafe extern "C" {
    fn mi_malloc(size: usize) -> *mut std::ffi::c_void;
    fn mi_calloc(count: usize, size: usize) -> *mut std::ffi::c_void;
    fn mi_realloc(pointer: *mut std::ffi::c_void, size: usize) -> *mut std::ffi::c_void;
    fn mi_free(pointer: *mut std::ffi::c_void);
}

/// Makes tree-sitter allocate with mimalloc instead of the C library's
/// allocator, before the first parser exists. A parse allocates (and a
/// dropped tree frees) every node of the file one by one; with glibc's
/// allocator that was a large share of cold chunking time.
#[cfg(feature = "syntax")]
fn use_the_daemon_allocator() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: this runs once, before this module (the only user of
        // tree-sitter in the process) creates any parser or tree, so
        // nothing allocated by one allocator is ever freed by the other;
        // the four functions are mimalloc's C entry points with the
        // signatures tree-sitter expects.
        unsafe { tree_sitter::set_allocator(Some(mi_malloc), Some(mi_calloc), Some(mi_realloc), Some(mi_free)) }
    });
}

#[cfg(not(feature = "syntax"))]
fn parse_outline(_: &'static Grammar, _: &str) -> Option<Outline> {
    None
}

/// How deep containers and namespaces are followed.
#[cfg(feature = "syntax")]
const MAX_DEPTH: usize = 6;

#[cfg(feature = "syntax")]
struct Walker<'a> {
    grammar: &'static Grammar,
    source: &'a [u8],
    decls: Vec<Decl>,
}

#[cfg(feature = "syntax")]
impl Walker<'_> {
    fn text(&self, node: tree_sitter::Node<'_>) -> &str {
        node.utf8_text(self.source).unwrap_or("")
    }

    /// Visits the children of `node` as top-level items (no `parent`) or
    /// as the members of container `parent`, whose names are prefixed by
    /// `prefix`. Returns how many declarations were found.
    fn members(&mut self, node: tree_sitter::Node<'_>, parent: Option<usize>, prefix: &str, depth: usize) -> usize {
        if depth > MAX_DEPTH {
            return 0;
        }
        let found_before = self.decls.len();
        let mut cursor = node.walk();
        // The comments (and attributes) right above the next item: their
        // first line, and the last line of the latest.
        let mut leading: Option<(usize, usize)> = None;
        let mut previous_end: Option<usize> = None;
        let children: Vec<tree_sitter::Node<'_>> = node.named_children(&mut cursor).collect();
        for child in children {
            let start = child.start_position().row + 1;
            let end = end_line(child);
            if self.grammar.is_leading(child.kind()) {
                // A comment that shares a line with the item before it
                // belongs to that item.
                if previous_end.is_some_and(|previous| start <= previous) {
                    continue;
                }
                leading = match leading {
                    Some((first, last)) if last + 1 >= start => Some((first, end)),
                    _ => Some((start, end)),
                };
                continue;
            }
            let first_line = match leading.take() {
                Some((first, last)) if last + 1 >= start => first,
                _ => start,
            };
            previous_end = Some(end);
            self.item(child, child, first_line, parent, prefix, depth);
        }
        self.decls.len() - found_before
    }

    /// Classifies `node` (whose lines, with its comments, start at
    /// `first_line`; `outer` is the wrapper it was found in, or itself).
    fn item(
        &mut self,
        outer: tree_sitter::Node<'_>,
        node: tree_sitter::Node<'_>,
        first_line: usize,
        parent: Option<usize>,
        prefix: &str,
        depth: usize,
    ) {
        let Some(role) = self.grammar.role(node.kind()) else { return };
        match role {
            Role::Wrap => {
                if let Some(inner) = self.wrapped(node) {
                    self.item(outer, inner, first_line, parent, prefix, depth);
                }
            }
            Role::Group => {
                if let Some(body) = self.body(node) {
                    self.members(body, parent, prefix, depth + 1);
                }
            }
            Role::BodiedDecl(_) if node.child_by_field_name("body").is_none() => {}
            Role::Decl(kind) | Role::BodiedDecl(kind) => {
                // A declaration with a syntax error inside is left to the
                // lines between declarations.
                if node.has_error() {
                    return;
                }
                let Some((kind, name)) = self.naming(node, kind, parent.is_some()) else { return };
                let name = qualified(prefix, self.grammar.separator, &name);
                let signature = outer.start_position().row.max(node.start_position().row) + 1;
                let end = end_line(outer);
                self.decls.push(Decl {
                    kind,
                    name,
                    start_line: first_line,
                    end_line: end,
                    signature_line: signature,
                    scope_end: end,
                    parent,
                    container: false,
                });
            }
            Role::Container(kind) => {
                let Some((kind, name)) = self.naming(node, kind, false) else { return };
                let member_prefix = qualified(prefix, self.grammar.separator, &self.member_prefix(node, &name));
                let name = qualified(prefix, self.grammar.separator, &name);
                let end = end_line(outer);
                let index = self.decls.len();
                self.decls.push(Decl {
                    kind,
                    name,
                    start_line: first_line,
                    end_line: end,
                    signature_line: node.start_position().row + 1,
                    scope_end: end,
                    parent,
                    container: false,
                });
                let found = match self.body(node) {
                    Some(body) => self.members(body, Some(index), &member_prefix, depth + 1),
                    None => 0,
                };
                if found > 0 {
                    // The container's own chunk is its header: the lines
                    // before its first member.
                    let first_member = self.decls[index + 1..]
                        .iter()
                        .filter(|decl| decl.parent == Some(index))
                        .map(|decl| decl.start_line)
                        .min()
                        .unwrap_or(end + 1);
                    let header = &mut self.decls[index];
                    header.container = true;
                    header.end_line = first_member.saturating_sub(1).max(header.start_line);
                    if first_member <= header.start_line {
                        // The first member shares the header's line.
                        header.end_line = header.start_line.saturating_sub(1);
                    }
                }
            }
        }
    }

    /// The declaration a wrapper (decorators, `export`, a template) holds.
    fn wrapped<'t>(&self, node: tree_sitter::Node<'t>) -> Option<tree_sitter::Node<'t>> {
        for field in ["definition", "declaration"] {
            if let Some(inner) = node.child_by_field_name(field) {
                return Some(inner);
            }
        }
        let mut cursor = node.walk();
        node.named_children(&mut cursor).filter(|child| self.grammar.role(child.kind()).is_some()).last()
    }

    /// Where a container's members (or a namespace's items) are.
    fn body<'t>(&self, node: tree_sitter::Node<'t>) -> Option<tree_sitter::Node<'t>> {
        if let Some(body) = node.child_by_field_name("body") {
            return Some(body);
        }
        let mut cursor = node.walk();
        let body = node.named_children(&mut cursor).find(|child| self.grammar.is_body(child.kind()));
        Some(body.unwrap_or(node))
    }

    /// The kind and name of a declaration; `None` without a name.
    fn naming(&self, node: tree_sitter::Node<'_>, kind: &'static str, member: bool) -> Option<(&'static str, String)> {
        let (kind, name) = (self.grammar.name)(self, node, kind)?;
        let kind = if member && kind == "function" { "method" } else { kind };
        let name = first_line_of(&name);
        if name.is_empty() { None } else { Some((kind, name)) }
    }

    /// The name a container's members are qualified with.
    fn member_prefix(&self, node: tree_sitter::Node<'_>, name: &str) -> String {
        match node.child_by_field_name("type").filter(|_| node.kind() == "impl_item") {
            Some(type_node) => strip_generics(self.text(type_node)),
            None => name.to_string(),
        }
    }
}

/// How a grammar names a declaration node: its kind (the role's, or a
/// more precise one) and its name.
#[cfg(feature = "syntax")]
type NameFn = for<'a> fn(&Walker<'a>, tree_sitter::Node<'_>, &'static str) -> Option<(&'static str, String)>;

/// Names a declaration: its `name` field, else what the node kind calls
/// for (C declarators, Rust impls, JavaScript variables, Swift type
/// declarations), else its first identifier.
#[cfg(feature = "syntax")]
fn name_of(walker: &Walker<'_>, node: tree_sitter::Node<'_>, kind: &'static str) -> Option<(&'static str, String)> {
    match node.kind() {
        "impl_item" => {
            let type_name = strip_generics(walker.text(node.child_by_field_name("type")?));
            let name = match node.child_by_field_name("trait") {
                Some(trait_node) => format!("{} for {type_name}", walker.text(trait_node)),
                None => type_name,
            };
            return Some((kind, name));
        }
        "lexical_declaration" | "variable_declaration" => {
            let mut cursor = node.walk();
            let declarators: Vec<_> =
                node.named_children(&mut cursor).filter(|child| child.kind() == "variable_declarator").collect();
            let first = declarators.first()?;
            let function_valued = first.child_by_field_name("value").is_some_and(|value| {
                matches!(value.kind(), "arrow_function" | "function_expression" | "function" | "generator_function")
            });
            let names: Vec<&str> = declarators
                .iter()
                .filter_map(|declarator| declarator.child_by_field_name("name"))
                .map(|name| walker.text(name))
                .collect();
            let kind = if function_valued {
                "function"
            } else if walker.text(node).starts_with("const") {
                "const"
            } else {
                "variable"
            };
            return Some((kind, names.join(", ")));
        }
        "init_declaration" => return Some((kind, "init".into())),
        "companion_object" => {
            let name = node.child_by_field_name("name").map_or("Companion", |name| walker.text(name));
            return Some((kind, name.to_string()));
        }
        "deinit_declaration" => return Some((kind, "deinit".into())),
        "singleton_method" => {
            let name = walker.text(node.child_by_field_name("name")?);
            return Some((kind, format!("self.{name}")));
        }
        "class_declaration" if walker.grammar.feature == "swift" => {
            let declared = node.child_by_field_name("declaration_kind").map(|word| walker.text(word));
            let kind = match declared {
                Some("struct") => "struct",
                Some("enum") => "enum",
                Some("extension") => "extension",
                Some("actor") => "actor",
                _ => "class",
            };
            return Some((kind, walker.text(node.child_by_field_name("name")?).to_string()));
        }
        _ => {}
    }
    if let Some(name) = node.child_by_field_name("name") {
        return Some((kind, walker.text(name).to_string()));
    }
    if let Some(declarator) = node.child_by_field_name("declarator") {
        return declarator_name(walker, declarator).map(|name| (kind, name));
    }
    let mut cursor = node.walk();
    let identifier = node.named_children(&mut cursor).find(|child| {
        matches!(child.kind(), "identifier" | "type_identifier" | "simple_identifier" | "constant" | "word" | "name")
    });
    identifier.map(|identifier| (kind, walker.text(identifier).to_string()))
}

/// The declared name at the end of a C/C++ declarator chain
/// (`*(*name)(int)`, `Foo::bar(int) const`).
#[cfg(feature = "syntax")]
fn declarator_name(walker: &Walker<'_>, mut node: tree_sitter::Node<'_>) -> Option<String> {
    for _ in 0..16 {
        match node.child_by_field_name("declarator") {
            Some(inner) => node = inner,
            None => break,
        }
    }
    match node.kind() {
        "identifier"
        | "field_identifier"
        | "qualified_identifier"
        | "destructor_name"
        | "operator_name"
        | "type_identifier"
        | "primitive_type" => Some(walker.text(node).to_string()),
        _ => {
            let mut cursor = node.walk();
            let found = node
                .named_children(&mut cursor)
                .find(|child| matches!(child.kind(), "identifier" | "field_identifier" | "type_identifier"));
            found.map(|child| walker.text(child).to_string())
        }
    }
}

#[cfg(feature = "syntax")]
fn end_line(node: tree_sitter::Node<'_>) -> usize {
    let end = node.end_position();
    // A node that ends at the start of a line ends on the line before.
    if end.column == 0 && end.row > node.start_position().row { end.row } else { end.row + 1 }
}

#[cfg(feature = "syntax")]
fn qualified(prefix: &str, separator: &str, name: &str) -> String {
    if prefix.is_empty() { name.to_string() } else { format!("{prefix}{separator}{name}") }
}

#[cfg(feature = "syntax")]
/// `Searcher<'a, T>` as `Searcher`.
fn strip_generics(text: &str) -> String {
    let text = first_line_of(text);
    match text.find('<') {
        Some(at) => text[..at].trim().to_string(),
        None => text,
    }
}

#[cfg(feature = "syntax")]
/// The first line of a name, whitespace runs collapsed.
fn first_line_of(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod golden;
#[cfg(test)]
mod tests;
