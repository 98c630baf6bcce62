//! fio's value types, read as fio reads them (fio HOWTO, "Parameter types"): sizes with
//! `kb_base` (`4k` = 4096 and `1m` = 1 MiB by default: `m` is never milli), times with a
//! default unit of seconds (`m` = minutes), booleans that may be bare, and parenthesised
//! arithmetic (`(4*$pagesize)`), evaluated here (fio pipes it to `bc`). Inside an
//! expression a time's default unit is microseconds, as in fio.

/// `kb_base`: 1024 (fio's default: every suffix is a power of 1024) or 1000 (SI suffixes
/// are powers of 1000, `KiB`-style ones of 1024).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KbBase {
    Binary,
    Decimal,
}

/// A size in bytes: `4096`, `4k`, `4KiB`, `1m`, `0x1000`, `(2*$pagesize)`.
pub fn size(text: &str, base: KbBase) -> Result<u64, String> {
    let t = text.trim();
    if t.ends_with('%') {
        return Err(format!(
            "`{t}`: a size in percent of the file or device is not supported here"
        ));
    }
    if t.starts_with('(') {
        return whole(expression(t)?, t);
    }
    if t.starts_with('-') {
        return Err(format!("`{t}`: a size cannot be negative"));
    }
    let (num, suffix) = split_number(t)?;
    if suffix.contains(['*', '+', '/']) {
        // fio reads the number before the operator and drops the rest, silently: its
        // `size=10*1000` is 10 bytes.
        return Err(format!(
            "`{t}`: arithmetic needs parentheses, `({t})`; fio reads only the number before the operator"
        ));
    }
    let mult = size_suffix(suffix, base)
        .ok_or_else(|| format!("`{t}`: unknown size suffix `{suffix}` (k, m, g, t, p; KiB...)"))?;
    to_u64(num * mult as f64, t)
}

/// A time in seconds: `30`, `30s`, `2m` (minutes), `500ms`, `100us`, `1h`, `1d`.
/// In a parenthesised expression the default unit is microseconds, as in fio.
pub fn time_s(text: &str) -> Result<f64, String> {
    let t = text.trim();
    if t.starts_with('(') {
        let v = expression(t)?;
        return Ok(v / 1e6);
    }
    let (num, suffix) = split_number(t)?;
    let mult = match suffix.to_ascii_lowercase().as_str() {
        "" | "s" | "sec" => 1.0,
        "ms" | "msec" => 1e-3,
        "us" | "usec" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        _ => {
            return Err(format!(
                "`{t}`: unknown time unit `{suffix}` (d, h, m, s, ms, us)"
            ))
        }
    };
    if num < 0.0 {
        return Err(format!("`{t}`: a time cannot be negative"));
    }
    Ok(num * mult)
}

/// A time whose bare number is microseconds (`thinktime=2000`), in seconds.
pub fn time_us(text: &str) -> Result<f64, String> {
    let t = text.trim();
    if t.ends_with(|c: char| c.is_ascii_digit()) && !t.starts_with('(') {
        let n: f64 = t.parse().map_err(|_| format!("`{t}` is not a time"))?;
        if n < 0.0 {
            return Err(format!("`{t}`: a time cannot be negative"));
        }
        return Ok(n * 1e-6);
    }
    time_s(t)
}

/// A whole number (`iodepth=32`, `rwmixread=70`, `(2*8)`).
pub fn int(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if t.starts_with('(') {
        return whole(expression(t)?, t);
    }
    if t.starts_with('-') {
        return Err(format!("`{t}`: a count cannot be negative"));
    }
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => t.parse::<u64>().ok(),
    };
    parsed.ok_or_else(|| format!("`{t}` is not a whole number"))
}

/// A boolean: bare (`None`) is true; `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`.
pub fn boolean(text: Option<&str>) -> Result<bool, String> {
    let Some(t) = text else { return Ok(true) };
    match t.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        other => match other.parse::<u64>() {
            // fio takes any number; non-zero is true.
            Ok(n) => Ok(n != 0),
            Err(_) => Err(format!("`{t}` is not a boolean (1 or 0)")),
        },
    }
}

fn to_u64(v: f64, t: &str) -> Result<u64, String> {
    if !v.is_finite() {
        return Err(format!("`{t}` is not a finite number"));
    }
    if v < 0.0 {
        return Err(format!("`{t}` is negative"));
    }
    if v >= u64::MAX as f64 {
        return Err(format!("`{t}` does not fit in 64 bits"));
    }
    Ok(v.round() as u64)
}

/// An expression's value as a whole number: `(1.5)` is refused, not rounded to 2.
fn whole(v: f64, t: &str) -> Result<u64, String> {
    let n = to_u64(v, t)?;
    if v.fract() != 0.0 {
        return Err(format!("`{t}` is {v}, not a whole number"));
    }
    Ok(n)
}

/// The leading number and the rest (the unit): `4k` -> (4, "k"), `1.5g` -> (1.5, "g").
fn split_number(t: &str) -> Result<(f64, &str), String> {
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        let end = hex
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(hex.len());
        let n =
            u64::from_str_radix(&hex[..end], 16).map_err(|_| format!("`{t}` is not a number"))?;
        return Ok((n as f64, &hex[end..]));
    }
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let n: f64 = t[..end]
        .parse()
        .map_err(|_| format!("`{t}` is not a number"))?;
    Ok((n, t[end..].trim()))
}

fn size_suffix(suffix: &str, base: KbBase) -> Option<u64> {
    let s = suffix.to_ascii_lowercase();
    let (letter, rest) = match s.char_indices().nth(1) {
        Some((i, _)) => (&s[..i], &s[i..]),
        None => (s.as_str(), ""),
    };
    let power = match letter {
        "" => return Some(1),
        "b" if rest.is_empty() => return Some(1),
        "k" => 1,
        "m" => 2,
        "g" => 3,
        "t" => 4,
        "p" => 5,
        _ => return None,
    };
    // `KiB`/`ki` are IEC; `KB`/`k` follow kb_base (fio's compatibility rule: with the
    // default 1024 every prefix is binary).
    let binary = match rest {
        "i" | "ib" => true,
        "" | "b" => base == KbBase::Binary,
        _ => return None,
    };
    Some(if binary {
        1024u64.pow(power)
    } else {
        1000u64.pow(power)
    })
}

/// How deeply an expression may nest (parentheses, unary minus, `^`): each level is a
/// frame of the parser's stack, and 30,000 of them overflow it.
pub const MAX_DEPTH: usize = 256;

/// Evaluates `(expr)`: numbers, `+ - * / % ^`, parentheses, unary minus.
pub fn expression(text: &str) -> Result<f64, String> {
    let mut p = Expr {
        s: text.as_bytes(),
        i: 0,
        depth: 0,
    };
    let v = p.sum()?;
    p.skip_ws();
    if p.i != p.s.len() {
        return Err(format!(
            "`{text}`: cannot read the expression from `{}`",
            &text[p.i..]
        ));
    }
    Ok(v)
}

struct Expr<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl Expr<'_> {
    /// `f` one level deeper, or an error past `MAX_DEPTH`.
    fn nested(&mut self, f: impl FnOnce(&mut Self) -> Result<f64, String>) -> Result<f64, String> {
        if self.depth >= MAX_DEPTH {
            return Err(format!(
                "nests deeper than {MAX_DEPTH} levels (parentheses, `-`, `^`)"
            ));
        }
        self.depth += 1;
        let v = f(self);
        self.depth -= 1;
        v
    }
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.i).copied()
    }
    fn sum(&mut self) -> Result<f64, String> {
        let mut v = self.product()?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.i += 1;
            let r = self.product()?;
            v = if op == b'+' { v + r } else { v - r };
        }
        Ok(v)
    }
    fn product(&mut self) -> Result<f64, String> {
        let mut v = self.power()?;
        while let Some(op @ (b'*' | b'/' | b'%')) = self.peek() {
            self.i += 1;
            let r = self.power()?;
            v = match op {
                b'*' => v * r,
                _ if r == 0.0 => return Err("division by zero".into()),
                b'/' => v / r,
                _ => v % r,
            };
        }
        Ok(v)
    }
    fn power(&mut self) -> Result<f64, String> {
        let base = self.unary()?;
        if self.peek() == Some(b'^') {
            self.i += 1;
            let exp = self.nested(Self::power)?;
            return Ok(base.powf(exp));
        }
        Ok(base)
    }
    fn unary(&mut self) -> Result<f64, String> {
        match self.peek() {
            Some(b'-') => {
                self.i += 1;
                Ok(-self.nested(Self::unary)?)
            }
            Some(b'(') => {
                self.i += 1;
                let v = self.nested(Self::sum)?;
                if self.peek() != Some(b')') {
                    return Err("a `(` is not closed".into());
                }
                self.i += 1;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => {
                let start = self.i;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_digit() || self.s[self.i] == b'.')
                {
                    self.i += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                text.parse()
                    .map_err(|_| format!("`{text}` is not a number"))
            }
            None => Err("ends where a number was expected".into()),
            _ => Err(format!(
                "expected a number at `{}`",
                String::from_utf8_lossy(&self.s[self.i..])
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_kb_base() {
        let b = KbBase::Binary;
        assert_eq!(size("4k", b), Ok(4096));
        assert_eq!(size("4K", b), Ok(4096));
        assert_eq!(size("1m", b), Ok(1 << 20), "m is MiB, never milli");
        assert_eq!(size("1MB", b), Ok(1 << 20));
        assert_eq!(size("1MiB", b), Ok(1 << 20));
        assert_eq!(size("2g", b), Ok(2 << 30));
        assert_eq!(size("512", b), Ok(512));
        assert_eq!(size("0x1000", b), Ok(4096));
        assert_eq!(size("1.5k", b), Ok(1536));
        let d = KbBase::Decimal;
        assert_eq!(size("4k", d), Ok(4000));
        assert_eq!(size("4KiB", d), Ok(4096));
        assert!(size("50%", b).unwrap_err().contains("percent"));
        assert!(size("4q", b).unwrap_err().contains("unknown size suffix"));
    }

    #[test]
    fn times_default_to_seconds_and_m_is_minutes() {
        assert_eq!(time_s("30"), Ok(30.0));
        assert_eq!(time_s("2m"), Ok(120.0));
        assert_eq!(time_s("500ms"), Ok(0.5));
        assert_eq!(time_s("1h"), Ok(3600.0));
        // fio: inside an expression a time is microseconds
        assert_eq!(time_s("(2*1000000)"), Ok(2.0));
        assert!(time_s("3x").is_err());
    }

    #[test]
    fn expressions_are_evaluated_here() {
        assert_eq!(expression("(4*4096)"), Ok(16384.0));
        assert_eq!(expression("(2^10 + 6 % 4 - -1)"), Ok(1027.0));
        assert_eq!(size("(4*4096)", KbBase::Binary), Ok(16384));
        assert!(expression("(1/0)").is_err());
        assert!(expression("(1+").is_err());
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        let deep = |n: usize| format!("{}4096{}", "(".repeat(n), ")".repeat(n));
        assert_eq!(expression(&deep(MAX_DEPTH)), Ok(4096.0));
        for n in [MAX_DEPTH + 1, 30_000, 100_000] {
            let e = expression(&deep(n)).unwrap_err();
            assert!(e.contains("nests deeper than 256"), "{e}");
        }
        let minus = format!("({}1)", "-".repeat(100_000));
        assert!(expression(&minus).unwrap_err().contains("nests deeper"));
        let tower = format!("(2{})", "^1".repeat(100_000));
        assert!(expression(&tower).unwrap_err().contains("nests deeper"));
    }

    #[test]
    fn a_result_that_is_not_a_whole_number_is_refused() {
        let b = KbBase::Binary;
        assert_eq!(
            size("(1.5)", b).unwrap_err(),
            "`(1.5)` is 1.5, not a whole number"
        );
        assert_eq!(size("(3/2*2)", b), Ok(3));
        assert_eq!(int("(0-1)").unwrap_err(), "`(0-1)` is negative");
        assert_eq!(
            size("-4k", b).unwrap_err(),
            "`-4k`: a size cannot be negative"
        );
        assert!(size("(2^64)", b)
            .unwrap_err()
            .contains("does not fit in 64 bits"));
        assert!(size("(1/0)", b).unwrap_err().contains("division by zero"));
    }

    #[test]
    fn booleans_may_be_bare() {
        assert_eq!(boolean(None), Ok(true));
        assert_eq!(boolean(Some("0")), Ok(false));
        assert_eq!(boolean(Some("true")), Ok(true));
        assert!(boolean(Some("maybe")).is_err());
    }
}
