//! The `when` expressions of a rules file: a closed, small grammar (seed 003
//! §5, SPEC §13). No arithmetic, no functions, no `confidence`.
//!
//! ```text
//! expr       = and { "or" and }
//! and        = unary { "and" unary }
//! unary      = "not" unary | "(" expr ")" | comparison
//! comparison = subject ( op literal | "in" "[" literal { "," literal } [","] "]" )
//! subject    = NAME [ "." ( "p" | "margin" | "mean" ) ]
//! op         = "==" | "!=" | "<" | "<=" | ">" | ">="
//! literal    = NAME | NUMBER            NUMBER = digits [ "." digits ]
//! NAME       = letter or "_", then letters, digits, "_" or "-"
//! ```
//!
//! `not` binds tighter than `and`, which binds tighter than `or`. Parentheses
//! and `not`s nest at most [`MAX_DEPTH`] deep, and an expression has at most
//! [`MAX_CHARS`] characters, so parsing is bounded; it never panics.
//!
//! [`parse`] checks the syntax; [`check`] the meaning against the declared
//! questions (types, options, ranges); [`eval`] decides with the answers.

/// Parentheses and `not`s nest at most this deep.
pub const MAX_DEPTH: usize = 32;
/// An expression is at most this many characters.
pub const MAX_CHARS: usize = 2_000;

/// The words of the grammar; they cannot name a question or an option.
pub const KEYWORDS: [&str; 4] = ["and", "or", "not", "in"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    fn text(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }

    fn holds(self, ordering: Option<core::cmp::Ordering>) -> bool {
        use core::cmp::Ordering::*;
        match (self, ordering) {
            (_, None) => false,
            (CmpOp::Eq, Some(o)) => o == Equal,
            (CmpOp::Ne, Some(o)) => o != Equal,
            (CmpOp::Lt, Some(o)) => o == Less,
            (CmpOp::Le, Some(o)) => o != Greater,
            (CmpOp::Gt, Some(o)) => o == Greater,
            (CmpOp::Ge, Some(o)) => o != Less,
        }
    }
}

/// What of a question's answer a comparison reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// choice: the option; noul: the probability; score: the most probable level (1-based).
    Value,
    /// The probability of the chosen option or level.
    P,
    /// The first probability minus the second.
    Margin,
    /// A score's expected level (1-based).
    Mean,
}

impl Field {
    fn suffix(self) -> &'static str {
        match self {
            Field::Value => "",
            Field::P => ".p",
            Field::Margin => ".margin",
            Field::Mean => ".mean",
        }
    }
}

/// `kind`, `kind.margin`: a question and a field; `at` is its byte offset.
#[derive(Clone, Debug, PartialEq)]
pub struct Subject {
    pub question: String,
    pub field: Field,
    pub at: usize,
}

impl Subject {
    fn text(&self) -> String {
        format!("{}{}", self.question, self.field.suffix())
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Name { name: String, at: usize },
    Number { text: String, value: f64, at: usize },
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Or(Vec<Expr>),
    And(Vec<Expr>),
    Not(Box<Expr>),
    Cmp {
        subject: Subject,
        op: CmpOp,
        value: Literal,
    },
    In {
        subject: Subject,
        values: Vec<Literal>,
    },
}

/// What is wrong, and where: a byte offset in the expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprError {
    pub at: usize,
    pub message: String,
}

fn fail<T>(at: usize, message: impl Into<String>) -> Result<T, ExprError> {
    Err(ExprError {
        at,
        message: message.into(),
    })
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Name(String),
    Number(String),
    Open,
    Close,
    OpenList,
    CloseList,
    Comma,
    Dot,
    Cmp(CmpOp),
    And,
    Or,
    Not,
    In,
    End,
}

/// A token as written: `` `kind` ``, or `the end`.
fn describe(src: &str, at: usize) -> String {
    let rest = src.get(at..).unwrap_or("");
    let len = match rest.chars().next() {
        None => return "the end".into(),
        Some(c) if is_name_char(c) || c == '.' => rest
            .find(|c: char| !(is_name_char(c) || c == '.'))
            .unwrap_or(rest.len()),
        Some(c) if "=!<>".contains(c) && rest[c.len_utf8()..].starts_with('=') => 2,
        Some(c) => c.len_utf8(),
    };
    format!("`{}`", &rest[..len])
}

/// `items` joined by `sep`.
pub fn join<S: AsRef<str>>(items: &[S], sep: &str) -> String {
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        out.push_str(item.as_ref());
    }
    out
}

/// The value of `digits[.digits]`, exactly as `str::parse::<f64>` would
/// give it (an integer of at most 15 digits over a power of ten is a
/// correctly rounded division), without pulling float parsing into the
/// component. None past 15 digits.
fn number_value(text: &str) -> Option<f64> {
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    if int.len() + frac.len() > 15 {
        return None;
    }
    let mut n: u64 = 0;
    for b in int.bytes().chain(frac.bytes()) {
        n = n * 10 + u64::from(b - b'0');
    }
    const TENS: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    Some(n as f64 / TENS[frac.len()])
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Whether `s` can name a question or an option in an expression.
pub fn is_name(s: &str) -> bool {
    s.starts_with(is_name_start) && s.chars().all(is_name_char) && !KEYWORDS.contains(&s)
}

fn lex(src: &str) -> Result<Vec<(Tok, usize)>, ExprError> {
    let mut out = Vec::new();
    let mut chars = src.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let tok = match c {
            c if c.is_whitespace() => continue,
            '(' => Tok::Open,
            ')' => Tok::Close,
            '[' => Tok::OpenList,
            ']' => Tok::CloseList,
            ',' => Tok::Comma,
            '.' if next.is_some_and(|n| n.is_ascii_digit()) => {
                return fail(at, "write a number with a leading digit: `0.5`, not `.5`")
            }
            '.' => Tok::Dot,
            '=' | '!' | '<' | '>' => {
                let double = next == Some('=');
                if double {
                    chars.next();
                }
                match (c, double) {
                    ('=', true) => Tok::Cmp(CmpOp::Eq),
                    ('!', true) => Tok::Cmp(CmpOp::Ne),
                    ('<', true) => Tok::Cmp(CmpOp::Le),
                    ('>', true) => Tok::Cmp(CmpOp::Ge),
                    ('<', false) => Tok::Cmp(CmpOp::Lt),
                    ('>', false) => Tok::Cmp(CmpOp::Gt),
                    ('=', false) => {
                        return fail(at, "`=` alone is not an operator: compare with `==`")
                    }
                    _ => return fail(at, "`!` alone is not an operator: write `not`, or `!=`"),
                }
            }
            '&' => return fail(at, "write `and`, not `&`/`&&`"),
            '|' => return fail(at, "write `or`, not `|`/`||`"),
            '+' | '-' | '*' | '/' | '%' => {
                return fail(
                    at,
                    format!("`{c}`: rules have no arithmetic (and no negative numbers)"),
                )
            }
            '"' | '\'' => {
                return fail(
                    at,
                    "write option names bare, without quotes: `kind == research`",
                )
            }
            c if c.is_ascii_digit() => {
                let mut end = at + 1;
                let mut seen_dot = false;
                while let Some(&(i, n)) = chars.peek() {
                    if n.is_ascii_digit() {
                        end = i + 1;
                        chars.next();
                    } else if n == '.'
                        && !seen_dot
                        && src[i + 1..].starts_with(|d: char| d.is_ascii_digit())
                    {
                        seen_dot = true;
                        end = i + 1;
                        chars.next();
                    } else {
                        break;
                    }
                }
                if let Some(&(i, n)) = chars.peek() {
                    if is_name_char(n) || n == '.' {
                        return fail(
                            i,
                            format!("`{}` is not a number", &src[at..(i + n.len_utf8())]),
                        );
                    }
                }
                Tok::Number(src[at..end].to_string())
            }
            c if is_name_start(c) => {
                let mut end = at + 1;
                while let Some(&(i, n)) = chars.peek() {
                    if !is_name_char(n) {
                        break;
                    }
                    end = i + 1;
                    chars.next();
                }
                match &src[at..end] {
                    "and" => Tok::And,
                    "or" => Tok::Or,
                    "not" => Tok::Not,
                    "in" => Tok::In,
                    name => Tok::Name(name.to_string()),
                }
            }
            c => return fail(at, format!("unexpected character `{c}`")),
        };
        out.push((tok, at));
    }
    out.push((Tok::End, src.len()));
    Ok(out)
}

/// Parses a `when` expression (syntax only; see [`check`]).
pub fn parse(src: &str) -> Result<Expr, ExprError> {
    if src.chars().nth(MAX_CHARS).is_some() {
        return fail(
            0,
            format!("the expression is longer than {MAX_CHARS} characters"),
        );
    }
    let tokens = lex(src)?;
    if tokens.len() == 1 {
        return fail(0, "the expression is empty");
    }
    let mut p = Parser {
        src,
        tokens,
        pos: 0,
    };
    let expr = p.or(0)?;
    match p.peek() {
        Tok::End => Ok(expr),
        Tok::Close => fail(p.at(), "`)` without a matching `(`"),
        _ => fail(
            p.at(),
            format!(
                "unexpected {} after a complete condition: join conditions with `and` or `or`",
                p.describe(p.at())
            ),
        ),
    }
}

struct Parser<'s> {
    src: &'s str,
    tokens: Vec<(Tok, usize)>,
    pos: usize,
}

impl Parser<'_> {
    fn describe(&self, at: usize) -> String {
        describe(self.src, at)
    }

    fn peek(&self) -> &Tok {
        self.tokens.get(self.pos).map_or(&Tok::End, |(t, _)| t)
    }

    fn at(&self) -> usize {
        self.tokens
            .get(self.pos)
            .or(self.tokens.last())
            .map_or(0, |&(_, at)| at)
    }

    fn bump(&mut self) -> (Tok, usize) {
        let token = self
            .tokens
            .get(self.pos)
            .cloned()
            .unwrap_or((Tok::End, self.at()));
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        token
    }

    fn or(&mut self, depth: usize) -> Result<Expr, ExprError> {
        let mut terms = vec![self.and(depth)?];
        while *self.peek() == Tok::Or {
            self.bump();
            terms.push(self.and(depth)?);
        }
        Ok(if terms.len() == 1 {
            terms.remove(0)
        } else {
            Expr::Or(terms)
        })
    }

    fn and(&mut self, depth: usize) -> Result<Expr, ExprError> {
        let mut terms = vec![self.unary(depth)?];
        while *self.peek() == Tok::And {
            self.bump();
            terms.push(self.unary(depth)?);
        }
        Ok(if terms.len() == 1 {
            terms.remove(0)
        } else {
            Expr::And(terms)
        })
    }

    fn unary(&mut self, depth: usize) -> Result<Expr, ExprError> {
        if matches!(self.peek(), Tok::Not | Tok::Open) && depth >= MAX_DEPTH {
            return fail(
                self.at(),
                format!("nested more than {MAX_DEPTH} levels deep"),
            );
        }
        match self.peek() {
            Tok::Not => {
                self.bump();
                Ok(Expr::Not(Box::new(self.unary(depth + 1)?)))
            }
            Tok::Open => {
                let (_, open) = self.bump();
                let inner = self.or(depth + 1)?;
                match self.peek() {
                    Tok::Close => {
                        self.bump();
                        Ok(inner)
                    }
                    _ => fail(
                        self.at(),
                        format!(
                            "expected `)` to close the `(` at {}, found {}",
                            open + 1,
                            self.describe(self.at())
                        ),
                    ),
                }
            }
            _ => self.comparison(),
        }
    }

    fn comparison(&mut self) -> Result<Expr, ExprError> {
        let (tok, at) = self.bump();
        let question = match tok {
            Tok::Name(name) => name,
            Tok::End => return fail(at, "the expression ends where a condition was expected"),
            Tok::Number(n) => {
                return fail(
                    at,
                    format!("a condition starts with a question, not `{n}`: write `risky >= {n}`"),
                )
            }
            _ => {
                return fail(
                    at,
                    format!("expected a question name, found {}", self.describe(at)),
                )
            }
        };
        let mut field = Field::Value;
        if *self.peek() == Tok::Dot {
            self.bump();
            let (tok, at) = self.bump();
            field = match tok {
                Tok::Name(f) if f == "p" => Field::P,
                Tok::Name(f) if f == "margin" => Field::Margin,
                Tok::Name(f) if f == "mean" => Field::Mean,
                Tok::Name(f) if f == "confidence" => {
                    return fail(at, "`.confidence` cannot be used: its definition is not published (use `.p` or `.margin`)")
                }
                _ => return fail(at, format!("unknown field {}: the fields are `.p`, `.margin` and `.mean`", self.describe(at))),
            };
        }
        let subject = Subject {
            question,
            field,
            at,
        };
        match self.bump() {
            (Tok::Cmp(op), _) => {
                let value = self.literal()?;
                Ok(Expr::Cmp { subject, op, value })
            }
            (Tok::In, _) => {
                match self.bump() {
                    (Tok::OpenList, _) => {}
                    (_, at) => return fail(at, format!("expected `[` after `in`, found {}", self.describe(at))),
                }
                let mut values = Vec::new();
                loop {
                    if *self.peek() == Tok::CloseList {
                        let at = self.at();
                        self.bump();
                        if values.is_empty() {
                            return fail(at, "the list after `in` is empty");
                        }
                        return Ok(Expr::In { subject, values });
                    }
                    values.push(self.literal()?);
                    match self.bump() {
                        (Tok::Comma, _) => {}
                        (Tok::CloseList, _) => return Ok(Expr::In { subject, values }),
                        (_, at) => return fail(at, format!("expected `,` or `]` in the list, found {}", self.describe(at))),
                    }
                }
            }
            (_, at) => fail(
                at,
                format!(
                    "expected a comparison (`==`, `!=`, `<`, `<=`, `>`, `>=` or `in`) after `{}`, found {}",
                    subject.text(),
                    self.describe(at)
                ),
            ),
        }
    }

    fn literal(&mut self) -> Result<Literal, ExprError> {
        match self.bump() {
            (Tok::Name(name), at) => Ok(Literal::Name { name, at }),
            (Tok::Number(text), at) => match number_value(&text) {
                Some(value) => Ok(Literal::Number { text, value, at }),
                None => fail(at, format!("`{text}` has more than 15 digits")),
            },
            (_, at) => fail(
                at,
                format!(
                    "expected an option name or a number, found {}",
                    self.describe(at)
                ),
            ),
        }
    }
}

/// A declared question as the checker sees it.
#[derive(Clone, Copy, Debug)]
pub enum Shape<'a> {
    /// The option names, in the file's order.
    Choice(&'a [String]),
    Noul,
    /// The number of levels.
    Score(usize),
}

/// Every meaning error of `expr` against the declared questions (`shape_of`
/// answers `None` for an undeclared name; `declared` lists them for messages).
pub fn check<'a>(
    expr: &Expr,
    shape_of: &dyn Fn(&str) -> Option<Shape<'a>>,
    declared: &[&str],
) -> Vec<ExprError> {
    let mut errors = Vec::new();
    check_into(expr, shape_of, declared, &mut errors);
    errors
}

fn check_into<'a>(
    expr: &Expr,
    shape_of: &dyn Fn(&str) -> Option<Shape<'a>>,
    declared: &[&str],
    out: &mut Vec<ExprError>,
) {
    let (subject, op, values): (&Subject, Option<CmpOp>, Vec<&Literal>) = match expr {
        Expr::Or(terms) | Expr::And(terms) => {
            for term in terms {
                check_into(term, shape_of, declared, out);
            }
            return;
        }
        Expr::Not(inner) => return check_into(inner, shape_of, declared, out),
        Expr::Cmp { subject, op, value } => (subject, Some(*op), vec![value]),
        Expr::In { subject, values } => (subject, None, values.iter().collect()),
    };
    let name = &subject.question;
    let Some(shape) = shape_of(name) else {
        out.push(ExprError {
            at: subject.at,
            message: format!(
                "unknown question `{name}` (declared: {})",
                join(declared, ", ")
            ),
        });
        return;
    };
    let mut error = |at: usize, message: String| out.push(ExprError { at, message });
    // The field a question can be asked for.
    match (shape, subject.field) {
        (Shape::Noul, Field::P | Field::Margin) => {
            return error(
                subject.at,
                format!("`{name}` is a noul question: its value is already a probability; compare `{name}` itself"),
            )
        }
        (Shape::Noul | Shape::Choice(_), Field::Mean) => {
            return error(subject.at, format!("`.mean` is only for score questions, and `{name}` is not one"))
        }
        _ => {}
    }
    if op.is_none() && subject.field != Field::Value {
        return error(
            subject.at,
            format!("`in` compares a question's value, not `{}`", subject.text()),
        );
    }
    match (shape, subject.field) {
        (Shape::Choice(options), Field::Value) => {
            if let Some(op) = op.filter(|op| !matches!(op, CmpOp::Eq | CmpOp::Ne)) {
                error(
                    subject.at,
                    format!(
                        "options have no order: compare `{name}` with `==`, `!=` or `in`, not `{}`",
                        op.text()
                    ),
                );
            }
            for value in values {
                match value {
                    Literal::Name { name: option, at } => {
                        if !options.contains(option) {
                            error(*at, format!("`{name}` has no option `{option}` (options: {})", join(options, ", ")));
                        }
                    }
                    Literal::Number { text, at, .. } => error(
                        *at,
                        format!("`{name}` is a choice question: compare it with an option name, not the number {text}"),
                    ),
                }
            }
        }
        (Shape::Noul, _) | (_, Field::P | Field::Margin) => {
            if op.is_none() {
                return error(subject.at, format!("`in` is for choice and score questions; compare `{name}` with a probability"));
            }
            for value in values {
                match value {
                    Literal::Number { value, text, at } if !(0.0..=1.0).contains(value) => {
                        error(*at, format!("`{}` is a probability from 0 to 1, and {text} is outside", subject.text()))
                    }
                    Literal::Number { .. } => {}
                    Literal::Name { name: word, at } => error(
                        *at,
                        format!("`{}` is a probability: compare it with a number from 0 to 1, not `{word}`", subject.text()),
                    ),
                }
            }
        }
        (Shape::Score(levels), Field::Value) => {
            for value in values {
                match value {
                    Literal::Number { value, text, at } => {
                        if value.fract() != 0.0 {
                            error(*at, format!("levels are whole numbers: use `{name}.mean` to compare with {text}"));
                        } else if !(1.0..=levels as f64).contains(value) {
                            error(*at, format!("`{name}` has levels 1 to {levels}, and {text} is not one of them"));
                        }
                    }
                    Literal::Name { name: word, at } => error(
                        *at,
                        format!("`{name}` is a score question: compare it with a level from 1 to {levels}, not `{word}`"),
                    ),
                }
            }
        }
        (Shape::Score(levels), Field::Mean) => {
            for value in values {
                match value {
                    Literal::Number { value, text, at }
                        if !(1.0..=levels as f64).contains(value) =>
                    {
                        error(
                            *at,
                            format!("`{name}.mean` runs from 1 to {levels}, and {text} is outside"),
                        )
                    }
                    Literal::Number { .. } => {}
                    Literal::Name { name: word, at } => error(
                        *at,
                        format!("`{name}.mean` is a number from 1 to {levels}, not `{word}`"),
                    ),
                }
            }
        }
        (Shape::Choice(_), Field::Mean) => {}
    }
}

/// One decoded answer, as rules read it. Probabilities are hundredths
/// divided by 100, so a literal with two decimals compares exactly.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    Choice {
        option: String,
        p: f64,
        margin: f64,
    },
    Noul {
        p: f64,
    },
    /// `level` is 1-based; `mean` too.
    Score {
        level: u32,
        p: f64,
        margin: f64,
        mean: f64,
    },
}

/// Whether `expr` holds for the answers (`answer_of` gives the answer of a
/// question). A question without an answer makes its comparison false; a
/// checked expression over a complete set of answers never meets one.
pub fn eval<'a>(expr: &Expr, answer_of: &dyn Fn(&str) -> Option<&'a Answer>) -> bool {
    match expr {
        Expr::Or(terms) => terms.iter().any(|t| eval(t, answer_of)),
        Expr::And(terms) => terms.iter().all(|t| eval(t, answer_of)),
        Expr::Not(inner) => !eval(inner, answer_of),
        Expr::Cmp { subject, op, value } => answer_of(&subject.question)
            .is_some_and(|answer| compare(answer, subject.field, *op, value)),
        Expr::In { subject, values } => answer_of(&subject.question).is_some_and(|answer| {
            values
                .iter()
                .any(|v| compare(answer, subject.field, CmpOp::Eq, v))
        }),
    }
}

fn compare(answer: &Answer, field: Field, op: CmpOp, value: &Literal) -> bool {
    let number = match (answer, field) {
        (Answer::Choice { option, .. }, Field::Value) => {
            return match value {
                Literal::Name { name, .. } => match op {
                    CmpOp::Eq => option == name,
                    CmpOp::Ne => option != name,
                    _ => false,
                },
                Literal::Number { .. } => false,
            }
        }
        (Answer::Noul { p }, Field::Value) => *p,
        (Answer::Score { level, .. }, Field::Value) => f64::from(*level),
        (Answer::Choice { p, .. } | Answer::Score { p, .. }, Field::P) => *p,
        (Answer::Choice { margin, .. } | Answer::Score { margin, .. }, Field::Margin) => *margin,
        (Answer::Score { mean, .. }, Field::Mean) => *mean,
        _ => return false,
    };
    match value {
        Literal::Number { value, .. } => op.holds(number.partial_cmp(value)),
        Literal::Name { .. } => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(src: &str) -> Expr {
        parse(src).unwrap_or_else(|e| panic!("{src}: {e:?}"))
    }

    fn perr(src: &str) -> ExprError {
        parse(src).expect_err(src)
    }

    fn cmp(q: &str, at: usize, op: CmpOp, value: &str, value_at: usize) -> Expr {
        Expr::Cmp {
            subject: Subject {
                question: q.into(),
                field: Field::Value,
                at,
            },
            op,
            value: Literal::Name {
                name: value.into(),
                at: value_at,
            },
        }
    }

    /// Structure only, positions dropped: `or(and(a,b),not(c))`.
    fn shape(e: &Expr) -> String {
        match e {
            Expr::Or(t) => format!("or({})", t.iter().map(shape).collect::<Vec<_>>().join(",")),
            Expr::And(t) => format!("and({})", t.iter().map(shape).collect::<Vec<_>>().join(",")),
            Expr::Not(i) => format!("not({})", shape(i)),
            Expr::Cmp { subject, .. } | Expr::In { subject, .. } => subject.question.clone(),
        }
    }

    #[test]
    fn a_comparison_keeps_its_positions() {
        assert_eq!(
            p("kind == research"),
            cmp("kind", 0, CmpOp::Eq, "research", 8)
        );
    }

    #[test]
    fn not_binds_tighter_than_and_tighter_than_or() {
        assert_eq!(shape(&p("a == x or b == x and c == x")), "or(a,and(b,c))");
        assert_eq!(shape(&p("a == x and b == x or c == x")), "or(and(a,b),c)");
        assert_eq!(shape(&p("not a == x and b == x")), "and(not(a),b)");
        assert_eq!(shape(&p("not a == x or not b == x")), "or(not(a),not(b))");
        assert_eq!(shape(&p("not (a == x or b == x)")), "not(or(a,b))");
        assert_eq!(shape(&p("(a == x or b == x) and c == x")), "and(or(a,b),c)");
        assert_eq!(shape(&p("not not a == x")), "not(not(a))");
        assert_eq!(shape(&p("a == x or b == x or c == x")), "or(a,b,c)");
    }

    #[test]
    fn fields_numbers_and_every_operator() {
        for (src, op) in [
            ("==", CmpOp::Eq),
            ("!=", CmpOp::Ne),
            ("<", CmpOp::Lt),
            ("<=", CmpOp::Le),
            (">", CmpOp::Gt),
            (">=", CmpOp::Ge),
        ] {
            let Expr::Cmp { op: got, .. } = p(&format!("risky {src} 0.7")) else {
                panic!()
            };
            assert_eq!(got, op);
        }
        let Expr::Cmp { subject, value, .. } = p("kind.margin>=0.2") else {
            panic!()
        };
        assert_eq!(subject.field, Field::Margin);
        assert_eq!(
            value,
            Literal::Number {
                text: "0.2".into(),
                value: 0.2,
                at: 13
            }
        );
        let Expr::Cmp { subject, .. } = p("size.mean > 2") else {
            panic!()
        };
        assert_eq!(subject.field, Field::Mean);
        let Expr::Cmp { subject, .. } = p("kind.p < 1") else {
            panic!()
        };
        assert_eq!(subject.field, Field::P);
    }

    #[test]
    fn in_lists() {
        let Expr::In { values, .. } = p("kind in [research, implement]") else {
            panic!()
        };
        assert_eq!(values.len(), 2);
        let Expr::In { values, .. } = p("size in [1, 2,]") else {
            panic!()
        };
        assert_eq!(values.len(), 2, "a trailing comma is fine");
        assert!(perr("kind in []").message.contains("empty"));
        assert!(perr("kind in research").message.contains("`[`"));
        assert!(perr("kind in [research implement]")
            .message
            .contains("`,` or `]`"));
        assert!(perr("kind in [research,").message.contains("found the end"));
    }

    #[test]
    fn bad_tokens_say_what_to_write() {
        let cases = [
            ("kind = research", 5, "`==`"),
            ("risky >= 0.7 && kind == x", 13, "`and`"),
            ("risky >= 0.7 || kind == x", 13, "`or`"),
            ("!risky", 0, "`not`"),
            ("size >= 1 + 1", 10, "arithmetic"),
            ("risky >= -1", 9, "arithmetic"),
            ("kind == \"research\"", 8, "without quotes"),
            ("risky >= .5", 9, "`0.5`"),
            ("risky >= 0.5.1", 12, "not a number"),
            ("risky >= 1x", 10, "not a number"),
            ("kind == 研究", 8, "unexpected character"),
            ("kind.confidence > 0.5", 5, "not published"),
            ("kind.foo > 0.5", 5, "unknown field"),
            ("kind research", 5, "expected a comparison"),
            ("kind ==", 7, "expected an option name or a number"),
            ("0.7 <= risky", 0, "starts with a question"),
            ("(kind == x", 10, "expected `)`"),
            ("kind == x)", 9, "without a matching"),
            ("kind == x risky >= 0.5", 10, "join conditions"),
            ("kind == x and", 13, "ends where a condition"),
            ("", 0, "empty"),
            ("   ", 0, "empty"),
            ("and", 0, "expected a question name"),
        ];
        for (src, at, needle) in cases {
            let e = perr(src);
            assert!(e.message.contains(needle), "{src}: {e:?}");
            assert_eq!(e.at, at, "{src}: {e:?}");
        }
    }

    #[test]
    fn numbers_read_exactly_as_rust_parses_them() {
        for text in [
            "0",
            "1",
            "0.7",
            "0.98",
            "0.99",
            "0.2",
            "0.05",
            "2.89",
            "10",
            "0.123456789",
            "123456.789012345",
        ] {
            assert_eq!(
                number_value(text),
                Some(text.parse::<f64>().unwrap()),
                "{text}"
            );
        }
        assert_eq!(number_value("1234567890.1234567"), None);
        assert!(perr("risky >= 0.12345678901234567")
            .message
            .contains("15 digits"));
    }

    #[test]
    fn depth_and_length_are_bounded() {
        let ok = format!("{}a == x{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert!(parse(&ok).is_ok());
        let deep = format!(
            "{}a == x{}",
            "(".repeat(MAX_DEPTH + 1),
            ")".repeat(MAX_DEPTH + 1)
        );
        assert!(perr(&deep).message.contains("nested"));
        let nots = format!("{}a == x", "not ".repeat(MAX_DEPTH + 1));
        assert!(perr(&nots).message.contains("nested"));
        let long = format!("a == x{}", " or a == x".repeat(MAX_CHARS / 10));
        assert!(perr(&long).message.contains("longer"));
    }

    fn questions(name: &str) -> Option<Shape<'static>> {
        static OPTIONS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
        let options =
            OPTIONS.get_or_init(|| vec!["research".into(), "implement".into(), "other".into()]);
        match name {
            "kind" => Some(Shape::Choice(options)),
            "risky" => Some(Shape::Noul),
            "size" => Some(Shape::Score(3)),
            _ => None,
        }
    }

    fn check_src(src: &str) -> Vec<String> {
        check(&p(src), &questions, &["risky", "kind", "size"])
            .into_iter()
            .map(|e| e.message)
            .collect()
    }

    #[test]
    fn meaning_is_checked_against_the_questions() {
        let ok = [
            "risky >= 0.7",
            "kind == research and size >= 3",
            "kind == research and kind.margin >= 0.2",
            "kind != other",
            "kind in [research, implement]",
            "size in [1, 2]",
            "size.mean >= 2.5 or size.p > 0.5 or size.margin < 0.1 or kind.p >= 0.9",
            "not (risky > 0.2)",
        ];
        for src in ok {
            assert_eq!(check_src(src), Vec::<String>::new(), "{src}");
        }
        let bad = [
            (
                "knd == research",
                "unknown question `knd` (declared: risky, kind, size)",
            ),
            (
                "kind == reserch",
                "has no option `reserch` (options: research, implement, other)",
            ),
            (
                "kind == 1",
                "compare it with an option name, not the number 1",
            ),
            ("kind > research", "options have no order"),
            ("kind in [research, 2]", "not the number 2"),
            ("risky == yes", "compare it with a number from 0 to 1"),
            ("risky >= 1.5", "outside"),
            ("risky.p >= 0.5", "noul question"),
            ("risky.margin >= 0.5", "noul question"),
            ("risky in [0.5]", "`in` is for choice and score"),
            ("kind.mean > 1", "only for score questions"),
            ("kind.margin in [0.5]", "`in` compares a question's value"),
            ("kind.margin >= 2", "outside"),
            ("size >= 4", "levels 1 to 3"),
            ("size >= 0", "levels 1 to 3"),
            ("size == 2.5", "use `size.mean`"),
            ("size == big", "level from 1 to 3"),
            ("size.mean > 3.5", "runs from 1 to 3"),
            ("size.mean > big", "not `big`"),
        ];
        for (src, needle) in bad {
            let errors = check_src(src);
            assert!(
                errors.iter().any(|m| m.contains(needle)),
                "{src}: {errors:?}"
            );
        }
        assert_eq!(
            check_src("knd == x or kind == y").len(),
            2,
            "every error is reported"
        );
    }

    #[test]
    fn evaluation_reads_the_answers() {
        let kind = Answer::Choice {
            option: "research".into(),
            p: 0.99,
            margin: 0.98,
        };
        let risky = Answer::Noul { p: 0.7 };
        let size = Answer::Score {
            level: 3,
            p: 0.9,
            margin: 0.85,
            mean: 2.89,
        };
        let answer_of = |q: &str| match q {
            "kind" => Some(&kind),
            "risky" => Some(&risky),
            "size" => Some(&size),
            _ => None,
        };
        let holds = |src: &str| eval(&p(src), &answer_of);
        assert!(holds("risky >= 0.7"), "0.7 compares exactly");
        assert!(!holds("risky > 0.7"));
        assert!(holds("kind == research and kind.margin >= 0.98"));
        assert!(!holds("kind.margin >= 0.99"));
        assert!(holds("kind in [implement, research]"));
        assert!(!holds("kind != research"));
        assert!(holds("size >= 3 and size.mean < 3 and size.p == 0.9"));
        assert!(holds("not size in [1, 2]"));
        assert!(holds("risky < 0.5 or size == 3"));
        assert!(!holds("risky < 0.5 and size == 3"));
        assert!(!holds("unknown == x"), "no answer: false");
    }

    proptest! {
        #[test]
        fn the_parser_never_panics(src in ".{0,300}") {
            let _ = parse(&src);
        }

        #[test]
        fn the_parser_never_panics_on_grammar_soup(
            src in r"((kind|risky|size|\.p|\.margin|\.mean|and|or|not|in|==|!=|<=|>=|<|>|=|!|\(|\)|\[|\]|,|0\.7|3|research|\.| )){0,60}"
        ) {
            if let Ok(expr) = parse(&src) {
                let _ = check(&expr, &questions, &["risky", "kind", "size"]);
            }
        }
    }
}
