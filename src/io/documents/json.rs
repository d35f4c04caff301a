//! JSON Lines documents: the text (and the id) from named fields of a JSON object per line.

/// The string field `field` of a JSON object line, and the id field `id` when asked for (a
/// string, or a number as `serde_json` writes it).
pub(super) fn fields(
    line: &str,
    field: &str,
    id: Option<&str>,
) -> std::result::Result<(String, Option<String>), String> {
    let v: serde_json::Value = serde_json::from_str(line).map_err(|e| {
        let msg = e.to_string();
        let msg = msg
            .rsplit_once(" at line ")
            .map_or(msg.as_str(), |(m, _)| m);
        format!("not valid JSON (column {}): {msg}", e.column())
    })?;
    let serde_json::Value::Object(mut obj) = v else {
        return Err(format!("not a JSON object but {}", json_kind(&v)));
    };
    let id = match id {
        None => None,
        Some(name) => Some(match obj.get(name) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Number(n)) => n.to_string(),
            Some(other) => {
                return Err(format!(
                    "id field `{name}` is {}, not a string or a number",
                    json_kind(other)
                ));
            }
            None => return Err(format!("no id field `{name}`")),
        }),
    };
    match obj.remove(field) {
        Some(serde_json::Value::String(s)) => Ok((s, id)),
        Some(other) => Err(format!(
            "field `{field}` is {}, not a string",
            json_kind(&other)
        )),
        None => Err(format!("no field `{field}`")),
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}
