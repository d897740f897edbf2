//! Names the user writes (a study's, a variant's, a workload's label) where they leave the
//! study file: as parts of paths, where `../` would write outside `results/`, and on a
//! terminal, where an escape sequence would move the cursor or retitle the window.

/// The longest name a study file may give (a 10 MB name once made `results list` take 38 s).
pub const LONGEST: usize = 200;

/// Why `name` cannot name a study, variant or workload, if it cannot.
pub fn problem(name: &str) -> Option<String> {
    let n = name.chars().count();
    if n > LONGEST {
        Some(format!("is {n} characters long; keep it to {LONGEST}"))
    } else if name.chars().any(char::is_control) {
        Some("holds a control character (a newline, an escape sequence); use printable text".into())
    } else {
        None
    }
}

/// `s` as one component of a file name: letters, digits and `-` kept, anything else (`/`,
/// `.`, spaces, control characters) `_`.
pub fn slug(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

/// `s` safe to print on a terminal: escape sequences (CSI `ESC [ ... x`, OSC `ESC ] ...
/// BEL`, and the rest) and every other control character, newlines included, taken out.
pub fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' | '\u{9b}' | '\u{9d}' => {
                // The sequence's kind: `[` (or the 8-bit CSI) up to a final byte, `]` (or
                // the 8-bit OSC) up to BEL or ST, anything else one character.
                let kind = match c {
                    '\u{9b}' => '[',
                    '\u{9d}' => ']',
                    _ => chars.next().unwrap_or(' '),
                };
                match kind {
                    '[' => while chars.next().is_some_and(|c| !('\u{40}'..='\u{7e}').contains(&c)) {},
                    ']' => {
                        while let Some(c) = chars.next() {
                            if c == '\u{7}' || c == '\u{9c}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                                break;
                            }
                        }
                    }
                    _ => {}
                }
            }
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_one_path_component() {
        assert_eq!(slug("../../../tmp/x"), "_________tmp_x");
        assert_eq!(slug("fscrypt on 1 core"), "fscrypt_on_1_core");
        assert_eq!(slug(".."), "__");
    }

    #[test]
    fn escape_sequences_and_control_characters_are_not_printed() {
        assert_eq!(printable("a\u{1b}[2J\u{1b}[31mb\u{1b}[0m"), "ab");
        assert_eq!(printable("x\u{1b}]0;owned\u{7}y\u{1b}]2;t\u{1b}\\z"), "xyz");
        assert_eq!(printable("line\nfake: ok\r\u{8}\u{9b}1Aé"), "linefake: oké");
        assert_eq!(printable("tail\u{1b}"), "tail");
    }

    #[test]
    fn long_names_and_control_characters_are_refused() {
        assert!(problem(&"x".repeat(LONGEST)).is_none());
        assert!(problem(&"é".repeat(LONGEST + 1)).unwrap().contains("201 characters long; keep it to 200"));
        assert!(problem("a\u{1b}[2Jb").unwrap().contains("control character"));
        assert!(problem("fscrypt on 1 core").is_none());
    }
}
