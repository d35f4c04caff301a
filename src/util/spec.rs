//! The one grammar of every spec's text form: `KIND[:KEY=VALUE[,KEY=VALUE]...]`, as in
//! `super-bit:depth=16`, `manku:k=3,levels=4` or `bands:f=1024,b=71,w=12`. Parsing checks
//! the shape once (a `KEY=VALUE` item, no key given twice, only the kind's keys) and gives
//! typed values with errors that name the key and the value; [`write`] makes the text form
//! back from the kind and the parameters that differ from their defaults. [`KindInfo`] and
//! [`ParamInfo`] describe the kinds of every family (signers, indexes) for help texts and
//! menus, and [`SpecText::kind_in`] finds the parsed kind among them.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// One kind of a spec family (a signer, an index), for help texts and menus: see
/// [`signers::kinds`](crate::signers::kinds) and [`index::kinds`](crate::index::kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindInfo {
    /// The name, as in the text form's `KIND`.
    pub name: &'static str,
    /// One line: what the kind is and when to use it.
    pub summary: &'static str,
    /// The parameters of the text form.
    pub params: &'static [ParamInfo],
}

/// One parameter of a kind, for help texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    /// The key in the text form (`kind:key=value`).
    pub name: &'static str,
    /// Its default, as text.
    pub default: &'static str,
    /// What it sets, in one line.
    pub summary: &'static str,
}

impl KindInfo {
    /// The keys of the kind's parameters, in the order of the table.
    pub fn keys(&self) -> Vec<&'static str> {
        self.params.iter().map(|p| p.name).collect()
    }
}

/// The entry of `kinds` named `name`: every kind of a family is listed.
pub(crate) fn info_of(kinds: &'static [KindInfo], name: &str) -> &'static KindInfo {
    kinds
        .iter()
        .find(|k| k.name == name)
        .expect("every kind is listed")
}

/// A parsed text form: the kind and its `KEY=VALUE` pairs, in order.
#[derive(Debug)]
pub(crate) struct SpecText<'a> {
    /// What is parsed, for error messages (`index spec`, `join scheme`, ...).
    what: &'static str,
    /// The kind's name, trimmed.
    pub kind: &'a str,
    /// The text parsed, trimmed (the kind alone when given split), for error messages.
    text: &'a str,
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
            pairs.push((k.trim(), v.trim()));
        }
        Ok(SpecText {
            text: s,
            ..Self::from_pairs(what, kind, pairs)?
        })
    }

    /// A text form already split (the parameters a file records, say).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] (named `what`) for a key given twice.
    pub fn from_pairs(
        what: &'static str,
        kind: &'a str,
        pairs: Vec<(&'a str, &'a str)>,
    ) -> Result<Self> {
        for (k, a) in pairs.iter().enumerate() {
            if pairs[..k].iter().any(|b| b.0 == a.0) {
                return Err(Error::param(
                    what,
                    format!("parameter `{}` given twice", a.0),
                ));
            }
        }
        Ok(SpecText {
            what,
            kind,
            text: kind,
            pairs,
        })
    }

    /// The text form with `extra` pairs given apart from it (a front end's keyword
    /// arguments): a key of `extra` that the text gives too must have the same value as
    /// `read` (the family's parser) reads it alone, as must a key given twice in `extra`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] (named `what`) for a key given twice with different
    /// values; `read`'s errors for such a key's values.
    pub fn with<T: PartialEq>(
        mut self,
        extra: &[(&'a str, &'a str)],
        read: impl Fn(&SpecText<'a>) -> Result<T>,
    ) -> Result<Self> {
        let alone = |k, v| read(&SpecText::from_pairs(self.what, self.kind, vec![(k, v)])?);
        // Pairs before `written` are the text's, the others came from `extra`.
        let written = self.pairs.len();
        for &(k, v) in extra {
            match self.pairs.iter().position(|p| p.0 == k) {
                None => self.pairs.push((k, v)),
                Some(i) => {
                    let w = self.pairs[i].1;
                    if w == v || alone(k, w)? == alone(k, v)? {
                        continue;
                    }
                    let first = if i < written {
                        format!("{w} in `{}`", self.text)
                    } else {
                        w.to_string()
                    };
                    return Err(self.bad(format!("parameter `{k}` given twice: {first} and {v}")));
                }
            }
        }
        Ok(self)
    }

    /// The kind's entry in `kinds`, with every given key checked against its parameters.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] (named `what`) for an unknown kind (`family` names it:
    /// `signer`, `index kind`), naming the known ones, or a key the kind does not take.
    pub fn kind_in(&self, family: &str, kinds: &'static [KindInfo]) -> Result<&'static KindInfo> {
        let info = kinds.iter().find(|k| k.name == self.kind).ok_or_else(|| {
            let names: Vec<&str> = kinds.iter().map(|k| k.name).collect();
            self.bad(format!(
                "unknown {family} `{}`: expected one of {}",
                self.kind,
                names.join(", ")
            ))
        })?;
        self.only(&info.keys())?;
        Ok(info)
    }

    /// The `KEY=VALUE` pairs, in the order given.
    pub fn pairs(&self) -> &[(&'a str, &'a str)] {
        &self.pairs
    }

    /// An error about this text, named by its `what`.
    pub fn bad(&self, reason: impl Into<String>) -> Error {
        Error::param(self.what, reason)
    }

    /// Fails on a key that `keys` does not list, naming the kind's keys.
    pub fn only(&self, keys: &[&str]) -> Result<()> {
        match self.pairs.iter().find(|(k, _)| !keys.contains(k)) {
            None => Ok(()),
            Some((k, _)) if keys.is_empty() => Err(self.bad(format!(
                "`{}` has no parameter `{k}`: it takes none",
                self.kind
            ))),
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

    #[test]
    fn kinds_are_found_and_their_keys_checked() {
        const KINDS: &[KindInfo] = &[
            KindInfo {
                name: "a",
                summary: "no parameters",
                params: &[],
            },
            KindInfo {
                name: "b",
                summary: "one",
                params: &[ParamInfo {
                    name: "x",
                    default: "1",
                    summary: "x",
                }],
            },
        ];
        let t = SpecText::parse("x spec", "b:x=2").unwrap();
        assert_eq!(t.kind_in("thing", KINDS).unwrap().name, "b");
        assert_eq!(info_of(KINDS, "a").summary, "no parameters");
        let e = SpecText::parse("x spec", "c")
            .unwrap()
            .kind_in("thing", KINDS);
        let e = e.unwrap_err().to_string();
        assert!(e.contains("unknown thing `c`: expected one of a, b"), "{e}");
        let e = SpecText::parse("x spec", "a:x=1")
            .unwrap()
            .kind_in("thing", KINDS);
        assert!(
            e.unwrap_err()
                .to_string()
                .contains("no parameter `x`: it takes none")
        );
        let e = SpecText::parse("x spec", "b:y=1")
            .unwrap()
            .kind_in("thing", KINDS);
        assert!(e.unwrap_err().to_string().contains("expected x"));
        let e = SpecText::from_pairs("x spec", "b", vec![("x", "1"), ("x", "2")]);
        assert!(e.unwrap_err().to_string().contains("given twice"));
    }
}
