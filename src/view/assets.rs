//! The viewer's page, script and stylesheet, embedded in the binary (nothing is fetched from
//! a network: the page loads only these and its data files).

pub const INDEX_HTML: &str = include_str!("assets/index.html");
pub const APP_JS: &str = include_str!("assets/app.js");
pub const APP_CSS: &str = include_str!("assets/app.css");

/// The static files by name, with their content types.
pub const FILES: [(&str, &str, &str); 3] = [
    ("index.html", "text/html; charset=utf-8", INDEX_HTML),
    ("app.js", "text/javascript; charset=utf-8", APP_JS),
    ("app.css", "text/css; charset=utf-8", APP_CSS),
];

/// A data file: the JavaScript that hands `data` to the page for `path`.
pub fn data_script(path: &str, data: &serde_json::Value) -> String {
    format!(
        "bench.put({},{});\n",
        serde_json::Value::String(path.to_string()),
        data
    )
}
