//! Renders the embedded Markdown prompt templates with minijinja, the one
//! template engine. Code chooses a template and fills its data; the prose
//! lives in the `.md`/`.md.j2` files next to the code that uses them.

use serde::Serialize;

#[derive(Debug, thiserror::Error)]
#[error("cannot render the prompt template {name}: {message}")]
pub struct PromptError {
    pub name: &'static str,
    pub message: String,
}

/// Renders `source` (the template named `name`) with `context`. Undefined
/// variables are errors; block tags leave no blank lines behind; the
/// result is trimmed.
pub fn render(name: &'static str, source: &'static str, context: impl Serialize) -> Result<String, PromptError> {
    let error = |error: minijinja::Error| PromptError { name, message: error.to_string() };
    let mut environment = minijinja::Environment::new();
    let syntax = minijinja::syntax::SyntaxConfig::builder().trim_blocks(true).lstrip_blocks(true).build();
    environment.set_syntax(syntax.map_err(error)?);
    environment.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    environment.add_template(name, source).map_err(error)?;
    let template = environment.get_template(name).map_err(error)?;
    let context = minijinja::Value::from(minijinja::value::Serde(context));
    Ok(template.render(context).map_err(error)?.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undefined_variables_are_errors_and_blocks_leave_no_blank_lines() {
        assert!(render("t", "{{ missing }}", serde_json::json!({})).is_err());
        let text = render("t", "a\n{% for x in xs %}\n- {{ x }}\n{% endfor %}\nb\n", serde_json::json!({"xs": [1, 2]}));
        assert_eq!(text.unwrap(), "a\n- 1\n- 2\nb");
    }
}
