//! The study (or capacity) file as the results store and the reports keep it: every key
//! command taken out. A key command may carry a token or a passphrase, so it is found on
//! the parsed document, not in the text: TOML spells one table in many ways (inline,
//! dotted keys, quoted keys, table headers, literal and multi-line strings), and any one a
//! text search misses would be stored.

use toml_edit::visit_mut::{self, VisitMut};
use toml_edit::{DocumentMut, Item, KeyMut, Value};

/// What a key command's value becomes.
pub const REDACTED: &str = "(key command, not stored)";

/// What is stored in place of a text that does not parse: nothing of it, since where its
/// key commands are cannot be told.
pub const NOT_STORED: &str = "# the file's text is not stored: it does not parse as TOML\n";

/// The text with the `command` of every `key` table (a layer's `key = { command = "..." }`,
/// at any depth and in any spelling) replaced by [`REDACTED`]; the rest of the text and its
/// comments stay. A workload's own `command` (the `command` workload's benchmark) is not a
/// key and stays: it is what the study measured.
pub fn redact_key_commands(text: &str) -> String {
    let Ok(mut doc) = text.parse::<DocumentMut>() else { return NOT_STORED.into() };
    KeyCommands { in_key: false }.visit_document_mut(&mut doc);
    let mut out = doc.to_string();
    // The document ends its last line; the text as written may not have.
    if !text.ends_with('\n') && out.ends_with('\n') {
        out.pop();
    }
    out
}

/// Walks the document, knowing whether the table it is in is called `key`.
struct KeyCommands {
    in_key: bool,
}

impl VisitMut for KeyCommands {
    fn visit_table_like_kv_mut(&mut self, key: KeyMut<'_>, node: &mut Item) {
        if self.in_key && key.get() == "command" {
            redact(node);
            return;
        }
        // An array (of inline tables or of tables) stays in its key's table: `key = [...]`
        // holds key tables still; any other key starts a table that is not one.
        let outer = std::mem::replace(&mut self.in_key, key.get() == "key");
        visit_mut::visit_table_like_kv_mut(self, key, node);
        self.in_key = outer;
    }
}

/// Replaces a value (whatever it was) by [`REDACTED`], keeping the spaces and comment around it.
fn redact(node: &mut Item) {
    let mut value = Value::from(REDACTED);
    if let Some(old) = node.as_value() {
        *value.decor_mut() = old.decor().clone();
    }
    *node = Item::Value(value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_a_key_command_is_redacted() {
        let spellings = [
            "key = { command = \"\"\"vault\nkv\"\"\" }",
            "key = { \"command\" = \"vault\" }",
            "key = { 'command' = '''vault''' }",
            "key.command = \"vault\"",
            "\"key\".'command' = 'vault'",
            "encryption = { layer = \"sqlcipher\", key = { command = \"vault\" } }",
            "encryption.key.command = \"vault\"",
            "[variants.key]\n\"command\" = 'vault'",
            "[variants.encryption.key]\ncommand = \"vault\"",
            "[variants.encryption]\nkey = { command = \"vault\" }",
            "[[configurations]]\nkey = [{ command = \"vault\" }]",
        ];
        for s in spellings {
            let text = format!("# a study\nname = \"s\"\n[[variants]]\nname = \"v\" # the one\n{s}\n");
            let out = redact_key_commands(&text);
            assert!(!out.contains("vault") && out.contains(REDACTED), "{s}:\n{out}");
            assert!(out.starts_with("# a study\nname = \"s\"\n") && out.contains("name = \"v\" # the one"), "{out}");
            assert!(out.parse::<DocumentMut>().is_ok(), "{out}");
        }
    }

    #[test]
    fn comments_and_other_commands_stay() {
        assert_eq!(
            redact_key_commands("a = 1\nkey = { command = \"x \\\" y\" } # c\n"),
            format!("a = 1\nkey = {{ command = \"{REDACTED}\" }} # c\n")
        );
        assert_eq!(
            redact_key_commands("[key]\ncommand = 'x' # how\nfile = 'f'\n"),
            format!("[key]\ncommand = \"{REDACTED}\" # how\nfile = 'f'\n")
        );
        let workload = "[workload]\nname = \"command\"\ncommand = \"pgbench -T 5\" # the benchmark\n";
        assert_eq!(redact_key_commands(workload), workload);
        assert_eq!(redact_key_commands("power = \"cmd:meter\""), "power = \"cmd:meter\"");
        // A command in a table inside a key table's sibling is not a key's.
        let other = "key = { file = \"/k\" }\nhook = { command = \"x\" }\n";
        assert_eq!(redact_key_commands(other), other);
    }

    #[test]
    fn a_text_that_does_not_parse_is_not_stored() {
        assert_eq!(redact_key_commands("key = { command = \"vault"), NOT_STORED);
    }
}
