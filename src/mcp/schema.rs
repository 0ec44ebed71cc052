//! The inputs of a tool: its fields, the JSON Schema `tools/list` shows for them, and the
//! check a call's arguments meet before anything runs (the one bad field named).

use serde_json::{json, Map, Value};

/// One argument of a tool.
pub struct Field {
    pub name: &'static str,
    pub kind: Kind,
    pub required: bool,
    pub about: &'static str,
}

pub enum Kind {
    /// A string of at most `max` bytes.
    Text {
        max: usize,
    },
    Flag,
    /// A list of strings.
    Texts,
    /// One of these strings.
    Choice(&'static [&'static str]),
    /// A whole number in `min..=max`.
    Count {
        min: i64,
        max: i64,
    },
}

/// The JSON Schema of an object of these fields; no other property is taken.
pub fn json_schema(fields: &[Field]) -> Value {
    let mut properties = Map::new();
    for f in fields {
        let mut p = match &f.kind {
            Kind::Text { max } => json!({"type": "string", "maxLength": max}),
            Kind::Flag => json!({"type": "boolean"}),
            Kind::Texts => json!({"type": "array", "items": {"type": "string"}}),
            Kind::Choice(values) => json!({"type": "string", "enum": values}),
            Kind::Count { min, max } => json!({"type": "integer", "minimum": min, "maximum": max}),
        };
        p["description"] = json!(f.about);
        properties.insert(f.name.to_string(), p);
    }
    let required: Vec<&str> = fields
        .iter()
        .filter(|f| f.required)
        .map(|f| f.name)
        .collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// Whether `args` meet `fields`; else what is wrong, naming the field.
pub fn check(fields: &[Field], args: &Map<String, Value>) -> Result<(), String> {
    for name in args.keys() {
        if !fields.iter().any(|f| f.name == name) {
            let known: Vec<&str> = fields.iter().map(|f| f.name).collect();
            return Err(format!(
                "unknown argument `{}` (this tool takes: {})",
                crate::inert::line(name),
                if known.is_empty() {
                    "nothing".to_string()
                } else {
                    known.join(", ")
                }
            ));
        }
    }
    for f in fields {
        let Some(value) = args.get(f.name).filter(|v| !v.is_null()) else {
            if f.required {
                return Err(format!("argument `{}` is required", f.name));
            }
            continue;
        };
        let wrong = |expected: &str| Err(format!("argument `{}`: expected {expected}", f.name));
        match &f.kind {
            Kind::Text { max } => match value.as_str() {
                Some(s) if s.len() > *max => return wrong(&format!("at most {max} bytes")),
                Some(_) => {}
                None => return wrong("a string"),
            },
            Kind::Flag => {
                if !value.is_boolean() {
                    return wrong("true or false");
                }
            }
            Kind::Texts => {
                if !value
                    .as_array()
                    .is_some_and(|a| a.iter().all(Value::is_string))
                {
                    return wrong("an array of strings");
                }
            }
            Kind::Choice(values) => {
                if !value.as_str().is_some_and(|s| values.contains(&s)) {
                    return wrong(&format!("one of {}", values.join(", ")));
                }
            }
            Kind::Count { min, max } => {
                if !value.as_i64().is_some_and(|n| (*min..=*max).contains(&n)) {
                    return wrong(&format!("a whole number from {min} to {max}"));
                }
            }
        }
    }
    Ok(())
}

/// The string argument `name`, if given.
pub fn text<'a>(args: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    args.get(name).and_then(Value::as_str)
}

/// The flag `name`; absent is false.
pub fn flag(args: &Map<String, Value>, name: &str) -> bool {
    args.get(name).and_then(Value::as_bool).unwrap_or(false)
}

/// The strings of list argument `name`; absent is none.
pub fn texts(args: &Map<String, Value>, name: &str) -> Vec<String> {
    args.get(name)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIELDS: &[Field] = &[
        Field {
            name: "label",
            kind: Kind::Text { max: 8 },
            required: true,
            about: "",
        },
        Field {
            name: "by",
            kind: Kind::Choice(&["a", "b"]),
            required: false,
            about: "",
        },
        Field {
            name: "n",
            kind: Kind::Count { min: 1, max: 3 },
            required: false,
            about: "",
        },
    ];

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn each_wrong_argument_is_named() {
        assert!(check(FIELDS, &args(json!({"label": "x", "by": "a", "n": 2}))).is_ok());
        for (bad, field) in [
            (json!({}), "label"),
            (json!({"label": 1}), "label"),
            (json!({"label": "toolongtext"}), "label"),
            (json!({"label": "x", "by": "c"}), "by"),
            (json!({"label": "x", "n": 9}), "n"),
            (json!({"label": "x", "yolo": true}), "yolo"),
        ] {
            let e = check(FIELDS, &args(bad.clone())).unwrap_err();
            assert!(e.contains(&format!("`{field}`")), "{bad}: {e}");
        }
        assert_eq!(json_schema(FIELDS)["required"], json!(["label"]));
    }
}
