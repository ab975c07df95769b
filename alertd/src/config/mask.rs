//! The configuration as `GET /api/v2/status` shows it: every secret replaced by `<secret>`, as
//! Alertmanager marshals its `Secret` and `SecretURL` fields. The text is re-serialised from the
//! parsed YAML, so comments (which may quote a secret too) are dropped.

use serde_norway::Value;

/// What a secret's value becomes.
pub const MASK: &str = "<secret>";

/// Keys whose value is a secret wherever they appear: Alertmanager's `Secret`/`SecretURL` fields
/// (receiver URLs carry tokens: Slack, webhook, the group robots) and alertd's own (`secret` of a
/// signed robot, `hmac_secret` of a webhook). `url` is masked in every receiver kind, as
/// Alertmanager masks `webhook_configs[].url`.
const SECRET_KEYS: &[&str] = &[
    "url",
    "api_url",
    "secret",
    "hmac_secret",
    "auth_password",
    "auth_secret",
    "password",
    "bearer_token",
    "credentials",
    "client_secret",
    "smtp_auth_password",
    "smtp_auth_secret",
    "slack_api_url",
    "opsgenie_api_key",
    "wechat_api_secret",
    "victorops_api_key",
    "api_key",
    "routing_key",
    "service_key",
    "user_key",
    "token",
    "bot_token",
    "webhook_url",
    "proxy_url",
    "key",
];

/// `src` (a configuration that parsed) with every secret masked; the text of a configuration that
/// does not parse as YAML is not shown at all.
pub fn masked(src: &str) -> String {
    let Ok(mut v) = serde_norway::from_str::<Value>(src) else {
        return String::new();
    };
    mask(&mut v);
    match v {
        Value::Null => String::new(),
        v => serde_norway::to_string(&v).unwrap_or_default(),
    }
}

fn mask(v: &mut Value) {
    match v {
        Value::Mapping(m) => {
            for (k, val) in m.iter_mut() {
                let secret = k.as_str().is_some_and(|k| SECRET_KEYS.contains(&k));
                if secret && !val.is_null() {
                    *val = Value::String(MASK.to_string());
                } else {
                    mask(val);
                }
            }
        }
        Value::Sequence(s) => s.iter_mut().for_each(mask),
        Value::Tagged(t) => mask(&mut t.value),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_receiver_secret_is_masked_and_the_rest_kept() {
        let src = r#"
# the old token was tok-in-a-comment
route:
  receiver: all
receivers:
  - name: all
    webhook_configs:
      - url: http://hooks.example/tok-webhook
        argus:
          hmac_secret: tok-hmac
          signature_header: X-Sig
    slack_configs:
      - api_url: https://hooks.slack.com/services/tok-slack
        channel: '#gpu'
    dingtalk_configs:
      - url: https://oapi.dingtalk.com/robot/send?access_token=tok-ding
        secret: tok-ding-sign
    feishu_configs:
      - url: https://open.feishu.cn/open-apis/bot/v2/hook/tok-feishu
        secret: tok-feishu-sign
    wecom_configs:
      - url: https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=tok-wecom
    email_configs:
      - to: ops@example.com
        from: argus@example.com
        smarthost: smtp.example.com:587
        auth_username: argus
        auth_password: tok-smtp
argus:
  external_url: http://argus.example:9090
"#;
        crate::config::parse(src, "t.yml").expect("valid");
        let out = masked(src);
        assert!(!out.contains("tok-"), "{out}");
        assert_eq!(out.matches(MASK).count(), 9, "{out}");
        for kept in ["channel: '#gpu'", "signature_header: X-Sig", "auth_username: argus", "ops@example.com"] {
            assert!(out.contains(kept), "{kept} missing from {out}");
        }
        assert!(out.contains("external_url: http://argus.example:9090"), "{out}");
    }

    #[test]
    fn anchors_and_text_that_is_not_yaml_show_nothing_secret() {
        let src = "receivers:\n- name: a\n  webhook_configs:\n  - url: &u http://x/tok-1\n- name: b\n  webhook_configs:\n  - url: *u\n";
        assert!(!masked(src).contains("tok-1"));
        assert_eq!(masked("url: [unclosed tok-2"), "");
        assert_eq!(masked(""), "");
    }
}
