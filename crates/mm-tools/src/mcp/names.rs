//! The names MCP tools are offered under: `<server>__<tool>`, made valid for the model's API
//! (`[a-zA-Z0-9_-]`, at most 64 characters) and unique, deterministically. Pure.

/// The longest tool name the OpenAI-compatible APIs accept.
pub const MAX_NAME: usize = 64;

/// Every character outside `[a-zA-Z0-9_-]` becomes `_`.
fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a: a stable hash (the same on every run and machine), unlike std's.
fn fnv(s: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// `name` cut to `max` characters (all ASCII here), ending with `tail`.
fn with_tail(name: &str, tail: &str, max: usize) -> String {
    let keep = max.saturating_sub(tail.len()).min(name.len());
    format!("{}{tail}", &name[..keep])
}

/// The name of one tool before collisions are resolved: `<server>__<tool>` sanitized; a name
/// too long keeps its start and ends with a hash of the whole original, so two long names that
/// share a start still differ.
pub fn base_name(server: &str, tool: &str) -> String {
    let full = format!("{}__{}", sanitize(server), sanitize(tool));
    if full.len() <= MAX_NAME {
        return full;
    }
    let hash = format!("_{:08x}", fnv(&format!("{server}__{tool}")));
    with_tail(&full, &hash, MAX_NAME)
}

/// The offered names of `tools` (`(server, tool)` pairs, in the order they are offered): a
/// name already taken (by an earlier tool, or in `taken`) gets `_2`, `_3`, … so the first keeps
/// it. The same input always gives the same names.
pub fn assign(tools: &[(&str, &str)], taken: &[String]) -> Vec<String> {
    let mut used: Vec<String> = taken.to_vec();
    let mut out = Vec::with_capacity(tools.len());
    for (server, tool) in tools {
        let base = base_name(server, tool);
        let mut name = base.clone();
        let mut n = 2;
        while used.contains(&name) {
            name = with_tail(&base, &format!("_{n}"), MAX_NAME);
            n += 1;
        }
        used.push(name.clone());
        out.push(name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn valid(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= MAX_NAME
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn plain_names_are_server_and_tool() {
        assert_eq!(base_name("everything", "get-sum"), "everything__get-sum");
        assert_eq!(base_name("my files", "read.file"), "my_files__read_file");
        assert_eq!(base_name("é", "ツール"), "______");
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let long = "a".repeat(80);
        let one = base_name("srv", &format!("{long}x"));
        let two = base_name("srv", &format!("{long}y"));
        assert_eq!(one.len(), MAX_NAME);
        assert_eq!(two.len(), MAX_NAME);
        assert_ne!(one, two);
        assert!(valid(&one) && valid(&two));
        assert_eq!(one, base_name("srv", &format!("{long}x")), "deterministic");
        assert!(one.starts_with("srv__aaaa"));
    }

    #[test]
    fn collisions_get_suffixes_in_order() {
        let names = assign(
            &[("a b", "t"), ("a.b", "t"), ("a_b", "t"), ("x", "bash")],
            &["x__bash".to_string()],
        );
        assert_eq!(names, vec!["a_b__t", "a_b__t_2", "a_b__t_3", "x__bash_2"]);
        let long = "z".repeat(70);
        let names = assign(&[("s", &long), ("s", &long)], &[]);
        assert!(names.iter().all(|n| valid(n)), "{names:?}");
        assert_ne!(names[0], names[1]);
        assert!(names[1].ends_with("_2"));
    }
}
