//! The one grammar of every spec's text form: `KIND[:KEY=VALUE[,KEY=VALUE]...]`, as in
//! `super-bit:depth=16`, `manku:k=3,levels=4` or `bands:f=1024,b=71,w=12`. Parsing checks
//! the shape once (a `KEY=VALUE` item, no key given twice, only the kind's keys) and gives
//! typed values with errors that name the key and the value; [`write`] makes the text form
//! back from the kind and the parameters that differ from their defaults.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// A parsed text form: the kind and its `KEY=VALUE` pairs, in order.
#[derive(Debug)]
pub(crate) struct SpecText<'a> {
    /// What is parsed, for error messages (`index spec`, `join scheme`, ...).
    what: &'static str,
    /// The kind's name, trimmed.
    pub kind: &'a str,
    pairs: Vec<(&'a str, &'a str)>,
}

impl<'a> SpecText<'a> {
    /// Splits `s` into its kind and pairs.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] (named `what`) for an empty kind, an item that is not
    /// `KEY=VALUE`, or a key given twice.
    pub fn parse(what: &'static str, s: &'a str) -> Result<Self> {
        let s = s.trim();
        let (kind, rest) = s.split_once(':').unwrap_or((s, ""));
        let kind = kind.trim();
        let bad = |reason: String| Error::param(what, reason);
        if kind.is_empty() {
            return Err(bad(format!("`{s}`: no kind before the parameters")));
        }
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        for item in rest.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| bad(format!("`{item}` in `{s}` is not a `key=value` parameter")))?;
            let (k, v) = (k.trim(), v.trim());
            if pairs.iter().any(|&(p, _)| p == k) {
                return Err(bad(format!("parameter `{k}` given twice in `{s}`")));
            }
            pairs.push((k, v));
        }
        Ok(SpecText { what, kind, pairs })
    }

    /// An error about this text, named by its `what`.
    pub fn bad(&self, reason: impl Into<String>) -> Error {
        Error::param(self.what, reason)
    }

    /// Fails on a key that `keys` does not list, naming the kind's keys.
    pub fn only(&self, keys: &[&str]) -> Result<()> {
        match self.pairs.iter().find(|(k, _)| !keys.contains(k)) {
            None => Ok(()),
            Some((k, _)) if keys.is_empty() => {
                Err(self.bad(format!("`{}` takes no parameters, `{k}` given", self.kind)))
            }
            Some((k, _)) => Err(self.bad(format!(
                "`{}` has no parameter `{k}`: expected {}",
                self.kind,
                keys.join(", ")
            ))),
        }
    }

    /// The raw value of `key`, if given.
    pub fn raw(&self, key: &str) -> Option<&'a str> {
        self.pairs.iter().find(|(k, _)| *k == key).map(|&(_, v)| v)
    }

    /// The value of `key` parsed as `T`, if given; `expected` describes it in the error
    /// (`a whole number`).
    pub fn get<T: FromStr>(&self, key: &str, expected: &str) -> Result<Option<T>> {
        match self.raw(key) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| self.bad(format!("`{key}={v}`: expected {expected}"))),
        }
    }

    /// The value of `key`, required.
    pub fn require<T: FromStr>(&self, key: &str, expected: &str) -> Result<T> {
        self.get(key, expected)?
            .ok_or_else(|| self.bad(format!("`{}` needs `{key}` ({expected})", self.kind)))
    }
}

/// The text form of a kind and its parameters: `kind` alone, or `kind:k=v,k=v`.
pub(crate) fn write(
    f: &mut fmt::Formatter<'_>,
    kind: &str,
    params: &[(&str, String)],
) -> fmt::Result {
    f.write_str(kind)?;
    for (i, (k, v)) in params.iter().enumerate() {
        write!(f, "{}{k}={v}", if i == 0 { ':' } else { ',' })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_split_trimmed_and_checked() {
        let t = SpecText::parse("x spec", " bands : f=64 , b=4,w= 16 ").unwrap();
        assert_eq!(t.kind, "bands");
        assert_eq!(t.get::<usize>("f", "a number").unwrap(), Some(64));
        assert_eq!(t.require::<u32>("w", "a number").unwrap(), 16);
        assert_eq!(t.get::<u32>("d", "a number").unwrap(), None);
        assert!(t.only(&["f", "b", "w"]).is_ok());
        let e = t.only(&["f", "b"]).unwrap_err().to_string();
        assert!(
            e.contains("no parameter `w`") && e.contains("x spec"),
            "{e}"
        );
        let e = t.require::<u32>("d", "a radius").unwrap_err().to_string();
        assert!(e.contains("needs `d`"), "{e}");
        let t = SpecText::parse("x spec", "bands:b=four").unwrap();
        let e = t
            .get::<usize>("b", "a whole number")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`b=four`: expected a whole number"), "{e}");
        for bad in ["bands:b", "bands:b=1,b=2", ":b=1", ""] {
            assert!(SpecText::parse("x spec", bad).is_err(), "{bad}");
        }
        let t = SpecText::parse("x spec", "radius").unwrap();
        assert_eq!(t.kind, "radius");
        assert!(t.only(&[]).is_ok());
    }
}
