//! A corpus of planted credentials for the recall tests: one value per
//! kind, built at run time from the kind's pattern with a seeded
//! generator, so no real key is ever written down. Behind the `corpus`
//! feature; never in a release build.

/// One planted credential: the rule that must find it, the line that
/// holds it (as it would appear in a source or configuration file), and
/// the value that must never leave.
#[derive(Debug, Clone)]
pub struct Plant {
    pub rule: &'static str,
    pub line: String,
    pub value: String,
}

/// A small deterministic generator (xorshift64*).
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn from(&mut self, alphabet: &str, length: usize) -> String {
        let alphabet: Vec<char> = alphabet.chars().collect();
        (0..length).map(|_| alphabet[(self.next() % alphabet.len() as u64) as usize]).collect()
    }
}

const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
const DIGITS: &str = "0123456789";
const HEX: &str = "0123456789abcdef";

fn alnum() -> String {
    format!("{UPPER}{LOWER}{DIGITS}")
}

/// At least 20 kinds of credentials, different for each `seed`.
pub fn plants(seed: u64) -> Vec<Plant> {
    let mut g = Gen(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let alnum = alnum();
    let base64 = format!("{alnum}+/");
    let mut plants = Vec::new();
    let mut plant = |rule: &'static str, value: String, line: &dyn Fn(&str) -> String| {
        plants.push(Plant { rule, line: line(&value), value });
    };
    let aws = format!("AKIA{}", g.from("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16));
    plant("aws-access-token", aws, &|v| format!("aws_access_key_id = {v}"));
    plant("github-pat", format!("ghp_{}", g.from(&alnum, 36)), &|v| format!("GITHUB_TOKEN: {v}"));
    let fine = format!("github_pat_{}", g.from(&format!("{alnum}_"), 82));
    plant("github-fine-grained-pat", fine, &|v| format!("let token = \"{v}\";"));
    plant("gitlab-pat", format!("glpat-{}", g.from(&alnum, 20)), &|v| format!("gitlab: {v}"));
    let slack = format!("xoxb-{}-{}-{}", g.from(DIGITS, 12), g.from(DIGITS, 13), g.from(&alnum, 24));
    plant("slack-bot-token", slack, &|v| format!("SLACK = \"{v}\""));
    plant("stripe-access-token", format!("sk_live_{}", g.from(&alnum, 32)), &|v| format!("stripe.api_key = '{v}'"));
    let openai = format!("sk-proj-{}T3BlbkFJ{}", g.from(&alnum, 74), g.from(&alnum, 74));
    plant("openai-api-key", openai, &|v| format!("OPENAI = \"{v}\""));
    let anthropic = format!("sk-ant-api03-{}AA", g.from(&alnum, 93));
    plant("anthropic-api-key", anthropic, &|v| format!("claude_key: \"{v}\""));
    let jwt =
        format!("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ{}.{}", g.from(&alnum, 40), g.from(&format!("{alnum}_-"), 43));
    plant("jwt", jwt, &|v| format!("Authorization: Bearer {v}"));
    plant("gcp-api-key", format!("AIza{}", g.from(&alnum, 35)), &|v| format!("maps_key = \"{v}\""));
    plant("npm-access-token", format!("npm_{}", g.from(&alnum, 36)), &|v| {
        format!("//registry.npmjs.org/:_authToken={v}")
    });
    let sendgrid = format!("SG.{}.{}", g.from(&alnum, 22), g.from(&alnum, 43));
    plant("sendgrid-api-token", sendgrid, &|v| format!("SENDGRID_API_KEY='{v}'"));
    plant("twilio-api-key", format!("SK{}", g.from(HEX, 32)), &|v| format!("twilio_sid = \"{v}\""));
    let pypi = format!("pypi-AgEIcHlwaS5vcmc{}", g.from(&alnum, 64));
    plant("pypi-upload-token", pypi, &|v| format!("password = {v}"));
    plant("shopify-access-token", format!("shpat_{}", g.from(HEX, 32)), &|v| format!("shop = '{v}'"));
    plant("digitalocean-pat", format!("dop_v1_{}", g.from(HEX, 64)), &|v| format!("do_token: \"{v}\""));
    plant("huggingface-access-token", format!("hf_{}", g.from(LOWER, 34)), &|v| format!("HF = \"{v}\""));
    let webhook = format!(
        "https://hooks.slack.com/services/T{}/B{}/{}",
        g.from(&alnum, 10),
        g.from(&alnum, 10),
        g.from(&alnum, 24)
    );
    plant("slack-webhook-url", webhook, &|v| format!("webhook = \"{v}\""));
    let age = format!("AGE-SECRET-KEY-1{}", g.from("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58));
    plant("age-secret-key", age, &|v| format!("# {v}"));
    plant("linear-api-key", format!("lin_api_{}", g.from(&alnum, 40)), &|v| format!("linear = \"{v}\""));
    plant("doppler-api-token", format!("dp.pt.{}", g.from(&alnum, 43)), &|v| format!("DOPPLER_TOKEN=\"{v}\""));
    let generic = format!("{}{}", g.from(&alnum, 28), g.from(DIGITS, 4));
    plant("generic-api-key", generic, &|v| format!("service_api_key = \"{v}\""));
    let password = format!("{}!{}#{}", g.from(&alnum, 5), g.from(DIGITS, 3), g.from(LOWER, 4));
    plant("generic-password", password, &|v| format!("db_password = \"{v}\""));
    let body: Vec<String> = (0..12).map(|_| g.from(&base64, 64)).collect();
    let key = format!("-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----", body.join("\n"));
    plants.push(Plant { rule: "private-key", line: key.clone(), value: body[3].clone() });
    plants
}

/// A source file holding every plant of `seed` among ordinary lines.
pub fn source_file(seed: u64) -> String {
    let mut text = String::from("# settings for the demo service\nimport os\n\n");
    for (index, plant) in plants(seed).iter().enumerate() {
        text.push_str(&format!("# setting {index}\n{}\n", plant.line));
    }
    text.push_str("\ndef main():\n    return os.getcwd()\n");
    text
}
