//! Controls: a variant's cost is measured against a stack that differs from it in the
//! encryption layer only (fscrypt against plain on the same ext4 image, gocryptfs against a
//! FUSE passthrough), as the seeds switched BitLocker or StoreSafe on and off on the same
//! volume. A study finds each encrypted variant's control among its variants, or adds it;
//! with `controls = false` it adds none and says which layers the verdict mixes in.

use crate::variants::VariantConfig;
use anyhow::{bail, Result};

/// Fills in each variant's `control`, adding the missing ones when `add`; returns warnings
/// for verdicts that measure more than their encryption layer.
pub fn resolve(variants: &mut Vec<VariantConfig>, add: bool) -> Result<Vec<String>> {
    let mut warnings = Vec::new();
    let mut added: Vec<VariantConfig> = Vec::new();
    for i in 0..variants.len() {
        let v = &variants[i];
        let known = |name: &str| variants.iter().chain(&added).find(|w| w.name == name).cloned();
        if let Some(name) = &v.control {
            let Some(c) = known(name).filter(|c| c.name != v.name) else {
                bail!("variant '{}': control '{name}' is not another variant of this study", v.name)
            };
            let extra: Vec<&str> = v.differences(&c).into_iter().filter(|d| *d != "encryption").collect();
            if !extra.is_empty() {
                warnings.push(format!(
                    "variant '{}' differs from its control '{name}' in {} besides the encryption",
                    v.name,
                    extra.join(", ")
                ));
            }
            continue;
        }
        let Some(want) = v.control_stack() else { continue };
        let found = variants.iter().chain(&added).find(|w| w.same_stack(&want)).map(|w| w.name.clone());
        let control = match found {
            Some(name) => name,
            None if add => {
                let mut name = want.name.clone();
                while known(&name).is_some() {
                    name.push_str(" (control)");
                }
                added.push(VariantConfig { name: name.clone(), ..want });
                name
            }
            None => {
                // One difference is a clean verdict: the encryption alone, or (with the
                // baseline's encryption) the one layer beside it, such as AES-NI.
                let differs = v.differences(&variants[0]);
                if differs.len() > 1 {
                    warnings.push(format!(
                        "variant '{}' differs from the baseline '{}' in {}, and controls = false: its verdict \
                         measures them together (a control would be '{}')",
                        v.name,
                        variants[0].name,
                        differs.join(", "),
                        want.name
                    ));
                }
                continue;
            }
        };
        variants[i].control = Some(control);
    }
    variants.extend(added);
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variants(text: &str) -> Vec<VariantConfig> {
        #[derive(serde::Deserialize)]
        struct F {
            variants: Vec<VariantConfig>,
        }
        toml::from_str::<F>(text).unwrap().variants
    }

    const MAIN: &str = "
        [[variants]]
        name = 'plain'
        [[variants]]
        name = 'sqlcipher'
        kind = 'sqlcipher'
        [[variants]]
        name = 'gocryptfs'
        kind = 'gocryptfs'
        [[variants]]
        name = 'fscrypt'
        kind = 'fscrypt'
        [[variants]]
        name = 'fscrypt-128'
        storage = 'ext4-image'
        encryption = { layer = 'fscrypt', key_bits = 128 }
    ";

    #[test]
    fn each_encrypted_variant_gets_a_control_that_differs_in_the_encryption_only() {
        let mut v = variants(MAIN);
        assert!(resolve(&mut v, true).unwrap().is_empty());
        let names: Vec<&str> = v.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(
            names,
            ["plain", "sqlcipher", "gocryptfs", "fscrypt", "fscrypt-128", "plain through FUSE", "plain on ext4 image"]
        );
        let control = |n: &str| v.iter().find(|v| v.name == n).unwrap().control.clone();
        assert_eq!(control("sqlcipher").as_deref(), Some("plain"), "an existing equal stack serves");
        assert_eq!(control("gocryptfs").as_deref(), Some("plain through FUSE"));
        assert_eq!(control("fscrypt").as_deref(), Some("plain on ext4 image"));
        assert_eq!(control("fscrypt-128").as_deref(), Some("plain on ext4 image"), "one control serves both");
        for a in &v {
            if let Some(c) = &a.control {
                let c = v.iter().find(|w| w.name == *c).unwrap();
                assert_eq!(a.differences(c), vec!["encryption"], "{} vs {}", a.name, c.name);
            }
        }
    }

    #[test]
    fn without_controls_the_study_says_what_the_verdict_mixes_in() {
        let mut v = variants(MAIN);
        let warnings = resolve(&mut v, false).unwrap();
        assert_eq!(v.len(), 5);
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].contains("'gocryptfs'") && warnings[0].contains("FUSE"), "{warnings:?}");
        assert!(warnings[1].contains("'fscrypt'") && warnings[1].contains("storage"), "{warnings:?}");
        // Against an encrypted baseline, one layer changed is the whole verdict.
        let mut v = variants(
            "[[variants]]\nname = 's'\nkind = 'sqlcipher'\n\
             [[variants]]\nname = 'masked'\nkind = 'sqlcipher'\naesni = false\n\
             [[variants]]\nname = 'masked-on-tmpfs'\nkind = 'sqlcipher'\naesni = false\nstorage = 'tmpfs'",
        );
        let warnings = resolve(&mut v, false).unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("'masked-on-tmpfs'") && warnings[0].contains("storage, AES-NI"), "{warnings:?}");
    }

    #[test]
    fn a_named_control_must_exist_and_is_checked() {
        let mut v =
            variants("[[variants]]\nname = 'plain'\n[[variants]]\nname = 'f'\nkind = 'fscrypt'\ncontrol = 'plain'");
        let w = resolve(&mut v, true).unwrap();
        assert!(w[0].contains("storage besides the encryption"), "{w:?}");
        let mut v =
            variants("[[variants]]\nname = 'plain'\n[[variants]]\nname = 'f'\nkind = 'fscrypt'\ncontrol = 'nope'");
        assert!(resolve(&mut v, true).unwrap_err().to_string().contains("'nope'"));
    }
}
