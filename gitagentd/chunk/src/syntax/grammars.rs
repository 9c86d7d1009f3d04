//! The languages built in (one `lang-*` cargo feature each) and, for
//! each, what its top-level syntax nodes are.

// A build without any grammar keeps the types but reads none of them.
#![cfg_attr(not(feature = "syntax"), allow(dead_code, unused_imports))]

/// What a syntax node is to the outline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A declaration of this kind: its whole text is one chunk.
    Decl(&'static str),
    /// A declaration with members (class, impl, trait, interface): the
    /// members are chunks of their own, qualified by its name.
    Container(&'static str),
    /// Holds one declaration and lends it its lines (decorators,
    /// `export`, `template<...>`).
    Wrap,
    /// Groups items without qualifying them (namespaces, modules).
    Group,
    /// A declaration of this kind only when it has a `body` (a Java enum
    /// constant with a class body, `FOO { @Override ... }`): its whole
    /// text, methods and all, is one chunk. Without a body it stays in
    /// its container's chunk, like a field. Its methods are not members
    /// of their own: they stay in the constant's chunk.
    BodiedDecl(&'static str),
}

// A build with only some languages does not use every role.
#[allow(unused_imports)]
use Role::{BodiedDecl, Container, Decl, Group, Wrap};

/// One built-in language.
pub struct Grammar {
    /// The cargo feature's language name (`lang-<feature>`).
    pub feature: &'static str,
    /// The embedding input's `language:` label.
    pub label: &'static str,
    extensions: &'static [&'static str],
    #[cfg(feature = "syntax")]
    pub language: fn() -> tree_sitter::Language,
    /// Between a container's name and a member's.
    pub separator: &'static str,
    roles: &'static [(&'static str, Role)],
    /// The kind and name of a declaration node.
    #[cfg(feature = "syntax")]
    pub name: super::NameFn,
}

impl Grammar {
    pub fn role(&self, kind: &str) -> Option<Role> {
        self.roles.iter().find(|(name, _)| *name == kind).map(|(_, role)| *role)
    }

    /// Comments and attributes that belong to the item below them.
    pub fn is_leading(&self, kind: &str) -> bool {
        kind.contains("comment") || kind == "attribute_item" || kind == "decorator"
    }

    /// The node of a container that holds its members.
    pub fn is_body(&self, kind: &str) -> bool {
        kind.ends_with("body")
            || kind.ends_with("_list")
            || matches!(kind, "block" | "body_statement" | "compound_statement")
    }
}

/// The grammar for a path, by extension.
pub fn for_path(path: &str) -> Option<&'static Grammar> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = &name[name.rfind('.')? + 1..];
    all().iter().find(|grammar| grammar.extensions.contains(&ext))
}

/// Every grammar built in.
pub fn all() -> &'static [Grammar] {
    GRAMMARS
}

#[cfg(feature = "syntax")]
macro_rules! grammar {
    ($feature:literal, $label:literal, $exts:expr, $language:expr, $sep:literal, $roles:expr) => {
        Grammar {
            feature: $feature,
            label: $label,
            extensions: $exts,
            language: || $language.into(),
            separator: $sep,
            roles: $roles,
            name: super::name_of,
        }
    };
}

#[cfg(feature = "lang-rust")]
const RUST: &[(&str, Role)] = &[
    ("function_item", Decl("function")),
    ("function_signature_item", Decl("function")),
    ("struct_item", Decl("struct")),
    ("enum_item", Decl("enum")),
    ("union_item", Decl("union")),
    ("type_item", Decl("type")),
    ("const_item", Decl("const")),
    ("static_item", Decl("static")),
    ("macro_definition", Decl("macro")),
    ("trait_item", Container("trait")),
    ("impl_item", Container("impl")),
    ("mod_item", Group),
];

#[cfg(feature = "lang-python")]
const PYTHON: &[(&str, Role)] = &[
    ("function_definition", Decl("function")),
    ("class_definition", Container("class")),
    ("decorated_definition", Wrap),
];

#[cfg(any(feature = "lang-javascript", feature = "lang-typescript"))]
const JAVASCRIPT: &[(&str, Role)] = &[
    ("function_declaration", Decl("function")),
    ("generator_function_declaration", Decl("function")),
    ("class_declaration", Container("class")),
    ("abstract_class_declaration", Container("class")),
    ("method_definition", Decl("method")),
    ("abstract_method_signature", Decl("method")),
    ("lexical_declaration", Decl("variable")),
    ("variable_declaration", Decl("variable")),
    ("interface_declaration", Decl("interface")),
    ("type_alias_declaration", Decl("type")),
    ("enum_declaration", Decl("enum")),
    ("function_signature", Decl("function")),
    ("export_statement", Wrap),
    ("ambient_declaration", Wrap),
    // `namespace X {}` parses as an expression statement.
    ("expression_statement", Wrap),
    ("internal_module", Group),
    ("module", Group),
];

#[cfg(feature = "lang-java")]
const JAVA: &[(&str, Role)] = &[
    ("class_declaration", Container("class")),
    ("interface_declaration", Container("interface")),
    ("enum_declaration", Container("enum")),
    ("record_declaration", Container("record")),
    ("annotation_type_declaration", Container("annotation")),
    ("method_declaration", Decl("method")),
    ("constructor_declaration", Decl("constructor")),
    ("compact_constructor_declaration", Decl("constructor")),
    ("enum_constant", BodiedDecl("constant")),
    ("enum_body_declarations", Group),
];

#[cfg(feature = "lang-c")]
const C: &[(&str, Role)] = &[
    ("function_definition", Decl("function")),
    ("struct_specifier", Decl("struct")),
    ("union_specifier", Decl("union")),
    ("enum_specifier", Decl("enum")),
    ("type_definition", Decl("type")),
    ("preproc_function_def", Decl("macro")),
    ("preproc_ifdef", Group),
    ("preproc_if", Group),
    ("preproc_else", Group),
    ("linkage_specification", Group),
];

#[cfg(feature = "lang-cpp")]
const CPP: &[(&str, Role)] = &[
    ("function_definition", Decl("function")),
    ("class_specifier", Container("class")),
    ("struct_specifier", Container("struct")),
    ("union_specifier", Decl("union")),
    ("enum_specifier", Decl("enum")),
    ("type_definition", Decl("type")),
    ("alias_declaration", Decl("type")),
    ("concept_definition", Decl("concept")),
    ("preproc_function_def", Decl("macro")),
    ("template_declaration", Wrap),
    ("namespace_definition", Group),
    ("preproc_ifdef", Group),
    ("preproc_if", Group),
    ("preproc_else", Group),
    ("linkage_specification", Group),
];

#[cfg(feature = "lang-csharp")]
const CSHARP: &[(&str, Role)] = &[
    ("class_declaration", Container("class")),
    ("struct_declaration", Container("struct")),
    ("interface_declaration", Container("interface")),
    ("record_declaration", Container("record")),
    ("enum_declaration", Decl("enum")),
    ("delegate_declaration", Decl("delegate")),
    ("method_declaration", Decl("method")),
    ("constructor_declaration", Decl("constructor")),
    ("destructor_declaration", Decl("destructor")),
    ("operator_declaration", Decl("operator")),
    ("property_declaration", Decl("property")),
    ("indexer_declaration", Decl("indexer")),
    ("namespace_declaration", Group),
    ("file_scoped_namespace_declaration", Group),
];

#[cfg(feature = "lang-ruby")]
const RUBY: &[(&str, Role)] = &[
    ("method", Decl("function")),
    ("singleton_method", Decl("method")),
    ("class", Container("class")),
    ("module", Container("module")),
    ("singleton_class", Group),
];

#[cfg(feature = "lang-php")]
const PHP: &[(&str, Role)] = &[
    ("function_definition", Decl("function")),
    ("method_declaration", Decl("method")),
    ("class_declaration", Container("class")),
    ("interface_declaration", Container("interface")),
    ("trait_declaration", Container("trait")),
    ("enum_declaration", Container("enum")),
    ("namespace_definition", Group),
];

#[cfg(feature = "lang-kotlin")]
const KOTLIN: &[(&str, Role)] = &[
    ("function_declaration", Decl("function")),
    ("secondary_constructor", Decl("constructor")),
    ("class_declaration", Container("class")),
    ("object_declaration", Container("object")),
    ("companion_object", Container("object")),
    ("type_alias", Decl("type")),
];

#[cfg(feature = "lang-swift")]
const SWIFT: &[(&str, Role)] = &[
    ("function_declaration", Decl("function")),
    ("init_declaration", Decl("init")),
    ("deinit_declaration", Decl("deinit")),
    ("subscript_declaration", Decl("subscript")),
    ("protocol_function_declaration", Decl("method")),
    ("typealias_declaration", Decl("type")),
    ("class_declaration", Container("class")),
    ("protocol_declaration", Container("protocol")),
];

#[cfg(feature = "lang-scala")]
const SCALA: &[(&str, Role)] = &[
    ("function_definition", Decl("function")),
    ("function_declaration", Decl("function")),
    ("type_definition", Decl("type")),
    ("class_definition", Container("class")),
    ("object_definition", Container("object")),
    ("trait_definition", Container("trait")),
    ("enum_definition", Container("enum")),
    ("extension_definition", Group),
    ("package_clause", Group),
];

#[cfg(feature = "lang-bash")]
const BASH: &[(&str, Role)] = &[("function_definition", Decl("function"))];

const GRAMMARS: &[Grammar] = &[
    #[cfg(feature = "lang-bash")]
    grammar!("bash", "shell", &["sh", "bash", "zsh"], tree_sitter_bash::LANGUAGE, ".", BASH),
    #[cfg(feature = "lang-c")]
    grammar!("c", "c", &["c", "h"], tree_sitter_c::LANGUAGE, "::", C),
    #[cfg(feature = "lang-cpp")]
    grammar!(
        "cpp",
        "cpp",
        &["cc", "cpp", "cxx", "c++", "hh", "hpp", "hxx", "h++", "ipp", "tpp"],
        tree_sitter_cpp::LANGUAGE,
        "::",
        CPP
    ),
    #[cfg(feature = "lang-csharp")]
    grammar!("csharp", "csharp", &["cs"], tree_sitter_c_sharp::LANGUAGE, ".", CSHARP),
    #[cfg(feature = "lang-java")]
    grammar!("java", "java", &["java"], tree_sitter_java::LANGUAGE, ".", JAVA),
    #[cfg(feature = "lang-javascript")]
    grammar!(
        "javascript",
        "javascript",
        &["js", "jsx", "mjs", "cjs"],
        tree_sitter_javascript::LANGUAGE,
        ".",
        JAVASCRIPT
    ),
    #[cfg(feature = "lang-kotlin")]
    grammar!("kotlin", "kotlin", &["kt", "kts"], tree_sitter_kotlin_ng::LANGUAGE, ".", KOTLIN),
    #[cfg(feature = "lang-php")]
    grammar!("php", "php", &["php"], tree_sitter_php::LANGUAGE_PHP, "::", PHP),
    #[cfg(feature = "lang-python")]
    grammar!("python", "python", &["py", "pyi"], tree_sitter_python::LANGUAGE, ".", PYTHON),
    #[cfg(feature = "lang-ruby")]
    grammar!("ruby", "ruby", &["rb", "rake"], tree_sitter_ruby::LANGUAGE, ".", RUBY),
    #[cfg(feature = "lang-rust")]
    grammar!("rust", "rust", &["rs"], tree_sitter_rust::LANGUAGE, "::", RUST),
    #[cfg(feature = "lang-scala")]
    grammar!("scala", "scala", &["scala", "sc"], tree_sitter_scala::LANGUAGE, ".", SCALA),
    #[cfg(feature = "lang-swift")]
    grammar!("swift", "swift", &["swift"], tree_sitter_swift::LANGUAGE, ".", SWIFT),
    #[cfg(feature = "lang-typescript")]
    grammar!(
        "typescript",
        "typescript",
        &["ts", "mts", "cts"],
        tree_sitter_typescript::LANGUAGE_TYPESCRIPT,
        ".",
        JAVASCRIPT
    ),
    #[cfg(feature = "lang-typescript")]
    grammar!("tsx", "typescript", &["tsx"], tree_sitter_typescript::LANGUAGE_TSX, ".", JAVASCRIPT),
];
