//! The parsed form of a custom webhook body (`webhook_configs[].argus.body_template`): a receiver
//! setting, checked when the configuration is validated. Rendering it into a body is delivery's
//! (`deliver::template`, which also lists the placeholders); the parsed form lives here, apart from
//! it, so that settings do not depend on delivery.

#[derive(Debug, Clone, PartialEq)]
pub struct BodyTemplate(pub(crate) Vec<Part>);

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    Text(String),
    Field(Field),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Field {
    Whole,
    Receiver,
    Status,
    GroupKey,
    ExternalUrl,
    TruncatedAlerts,
    Alerts,
    Title,
    Text,
    GroupLabel(String),
    CommonLabel(String),
    CommonAnnotation(String),
}

impl BodyTemplate {
    /// Parses a template; the error names the placeholder that is not known.
    pub fn parse(src: &str) -> Result<BodyTemplate, String> {
        let mut parts = Vec::new();
        let mut rest = src;
        while let Some(open) = rest.find("{{") {
            parts.push(Part::Text(rest[..open].to_string()));
            let after = &rest[open + 2..];
            let close = after.find("}}").ok_or_else(|| "a {{ is not closed".to_string())?;
            parts.push(Part::Field(field(after[..close].trim())?));
            rest = &after[close + 2..];
        }
        parts.push(Part::Text(rest.to_string()));
        Ok(BodyTemplate(parts))
    }
}

fn field(name: &str) -> Result<Field, String> {
    let label = |prefix: &str| name.strip_prefix(prefix).filter(|l| !l.is_empty()).map(str::to_string);
    Ok(match name {
        "." => Field::Whole,
        ".Receiver" => Field::Receiver,
        ".Status" => Field::Status,
        ".GroupKey" => Field::GroupKey,
        ".ExternalURL" => Field::ExternalUrl,
        ".TruncatedAlerts" => Field::TruncatedAlerts,
        ".Alerts" => Field::Alerts,
        ".Title" => Field::Title,
        ".Text" => Field::Text,
        _ => {
            if let Some(l) = label(".GroupLabels.") {
                Field::GroupLabel(l)
            } else if let Some(l) = label(".CommonLabels.") {
                Field::CommonLabel(l)
            } else if let Some(l) = label(".CommonAnnotations.") {
                Field::CommonAnnotation(l)
            } else {
                return Err(format!("unknown placeholder {{{{ {name} }}}}"));
            }
        }
    })
}
