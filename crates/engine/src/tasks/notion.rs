//! Notion as a task source: the API of version 2025-09-03, whose databases hold data
//! sources. Tasks are the pages of the tasks data source related to the project (a page
//! of the projects data source) whose status is not the done one, filtered by Notion.

use std::cell::RefCell;
use std::time::Duration;

use serde_json::{json, Value};

use crate::http::{Client, HttpError};

use super::{notion_id, Merged, NotionSettings as Settings, Task, TaskError, TaskSource, Token};

pub const API_VERSION: &str = "2025-09-03";
const DEFAULT_BASE: &str = "https://api.notion.com";
/// How often a request answered 429 (rate limited) is sent again, each after the wait
/// Notion's Retry-After asks for.
const MAX_RETRIES: u32 = 3;
/// A longer wait than this is not waited for: the command fails and says so.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(30);
/// Pages of a paginated answer read at most (100 results each).
const MAX_PAGES: usize = 100;
/// Blocks of a task's content read at most, and how deep into nested blocks.
const MAX_BLOCKS: usize = 2000;
const MAX_DEPTH: usize = 3;

pub struct Notion {
    settings: Settings,
    timeout: Duration,
    token: Token,
    base: String,
    client: Client,
    schema: RefCell<Option<Schema>>,
    project: RefCell<Option<String>>,
}

/// The tasks data source's properties orchestra uses.
#[derive(Debug, Clone)]
struct Schema {
    title: String,
    /// "status" or "select": the kind of the status property, which its filter and its
    /// update name.
    status_kind: String,
    relation: String,
}

/// What a request is about, for the one line a refusal becomes.
struct About {
    /// "the tasks data source 1c2f…"
    thing: String,
    /// What the person checks: "tasks_data_source in orchestra.toml's [tasks]".
    fix: String,
}

impl Notion {
    /// `$NOTION_API_URL` replaces the API's address (a stand-in, a proxy).
    pub fn new(settings: Settings, timeout: Duration, token: Token) -> Notion {
        let base = crate::paths::non_empty_env("NOTION_API_URL")
            .unwrap_or_else(|| DEFAULT_BASE.to_string())
            .trim_end_matches('/')
            .to_string();
        let client = Client::new(timeout);
        Notion {
            settings,
            timeout,
            token,
            base,
            client,
            schema: RefCell::new(None),
            project: RefCell::new(None),
        }
    }

    fn tasks_source(&self) -> About {
        About {
            thing: format!("tasks data source {}", self.settings.tasks_data_source),
            fix: "tasks_data_source in orchestra.toml's [tasks] (or NOTION_TASKS_DATA_SOURCE_ID)"
                .into(),
        }
    }

    fn projects_source(&self) -> About {
        About {
            thing: format!(
                "projects data source {}",
                self.settings.projects_data_source
            ),
            fix: "projects_data_source in orchestra.toml's [tasks] (or NOTION_PROJECTS_DATA_SOURCE_ID)"
                .into(),
        }
    }

    /// One API call, sent again on 429 after the wait Notion asks for (bounded).
    fn call(
        &self,
        method: &'static str,
        path: &str,
        body: Option<&Value>,
        about: &About,
    ) -> Result<Value, TaskError> {
        let url = format!("{}{path}", self.base);
        let mut retries = 0;
        loop {
            let mut request = self
                .client
                .request(method, &url)
                .secret_header("Authorization", &self.token.bearer())
                .header("Notion-Version", API_VERSION);
            if let Some(body) = body {
                request = request.json(body);
            }
            match request.send() {
                Ok(response) => return Ok(response.json()),
                Err(HttpError::Status {
                    status: 429,
                    retry_after,
                    ..
                }) if retries < MAX_RETRIES => {
                    let wait = retry_after.unwrap_or(Duration::from_secs(1 << retries));
                    if wait > MAX_RETRY_WAIT {
                        return Err(TaskError::Failed(format!(
                            "Notion is rate limiting (429) and asks to wait {}s: try again later",
                            wait.as_secs()
                        )));
                    }
                    std::thread::sleep(wait);
                    retries += 1;
                }
                Err(HttpError::Status {
                    status, excerpt, ..
                }) => {
                    let answer: Value = serde_json::from_str(&excerpt).unwrap_or(Value::Null);
                    return Err(self.refusal(status, &answer, about, retries));
                }
                Err(e) => return Err(self.unreachable(e, about)),
            }
        }
    }

    fn unreachable(&self, e: HttpError, about: &About) -> TaskError {
        match e {
            HttpError::TimedOut { .. } => TaskError::Failed(format!(
                "Notion did not answer within {} about {} (`timeout` in orchestra.toml's [tasks] sets the limit)",
                crate::duration::spell(self.timeout),
                about.thing
            )),
            HttpError::Unreachable { reason, .. } => {
                TaskError::Failed(format!("cannot reach Notion at {}: {reason}", self.base))
            }
            other => TaskError::Failed(format!("Notion failed about {}: {other}", about.thing)),
        }
    }

    /// The one line a refused request becomes, naming what to fix.
    fn refusal(&self, status: u16, answer: &Value, about: &About, retries: u32) -> TaskError {
        let said = answer
            .get("message")
            .and_then(Value::as_str)
            .map(|m| super::one_line(m, 300))
            .unwrap_or_default();
        let code = answer.get("code").and_then(Value::as_str).unwrap_or("");
        match status {
            401 => TaskError::Fix(format!(
                "Notion refused the token from {} (401 unauthorized): set NOTION_TOKEN to a valid integration token",
                self.token.from
            )),
            403 => TaskError::Fix(format!(
                "Notion's integration may not use {} (403 forbidden): share it with the integration in Notion (••• → Connections)",
                about.thing
            )),
            404 => TaskError::Fix(format!(
                "Notion finds no {} (404): check {}, and that it is shared with the integration",
                about.thing, about.fix
            )),
            400 | 409 | 422 => TaskError::Fix(format!(
                "Notion refused the request about {} ({status} {code}): {said} (check {})",
                about.thing, about.fix
            )),
            429 => TaskError::Failed(format!(
                "Notion is still rate limiting (429) after {retries} retries: try again later"
            )),
            _ => TaskError::Failed(format!(
                "Notion failed ({status} {code}) about {}{}",
                about.thing,
                if said.is_empty() {
                    String::new()
                } else {
                    format!(": {said}")
                }
            )),
        }
    }

    /// Every result of a paginated query (`has_more`/`next_cursor`), bounded.
    fn query_all(
        &self,
        data_source: &str,
        mut body: Value,
        about: &About,
    ) -> Result<Vec<Value>, TaskError> {
        let path = format!("/v1/data_sources/{data_source}/query");
        let mut results = Vec::new();
        for _ in 0..MAX_PAGES {
            let answer = self.call("POST", &path, Some(&body), about)?;
            results.extend(
                answer
                    .get("results")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            );
            let next = answer.get("next_cursor").and_then(Value::as_str);
            match (answer.get("has_more").and_then(Value::as_bool), next) {
                (Some(true), Some(cursor)) => body["start_cursor"] = json!(cursor),
                _ => return Ok(results),
            }
        }
        Ok(results)
    }

    fn schema(&self) -> Result<Schema, TaskError> {
        if let Some(schema) = self.schema.borrow().as_ref() {
            return Ok(schema.clone());
        }
        let about = self.tasks_source();
        let source = self.call(
            "GET",
            &format!("/v1/data_sources/{}", self.settings.tasks_data_source),
            None,
            &about,
        )?;
        let schema = read_schema(&source, &self.settings)?;
        *self.schema.borrow_mut() = Some(schema.clone());
        Ok(schema)
    }

    /// The project's page id: `project` itself when it is an id, else the page of the
    /// projects data source with that title.
    fn project_id(&self) -> Result<String, TaskError> {
        if let Some(id) = self.project.borrow().as_ref() {
            return Ok(id.clone());
        }
        let project = &self.settings.project;
        let id = match notion_id(project) {
            Some(id) => id,
            None => {
                let about = self.projects_source();
                let source = self.call(
                    "GET",
                    &format!("/v1/data_sources/{}", self.settings.projects_data_source),
                    None,
                    &about,
                )?;
                let title = property_of_kind(&source, "title").ok_or_else(|| {
                    TaskError::Fix(format!("{} has no title property", about.thing))
                })?;
                let found = self.call(
                    "POST",
                    &format!(
                        "/v1/data_sources/{}/query",
                        self.settings.projects_data_source
                    ),
                    Some(&json!({
                        "filter": {"property": title, "title": {"equals": project}},
                        "page_size": 1,
                    })),
                    &about,
                )?;
                found
                    .get("results")
                    .and_then(Value::as_array)
                    .and_then(|r| r.first())
                    .and_then(|p| p.get("id"))
                    .and_then(Value::as_str)
                    .and_then(notion_id)
                    .ok_or_else(|| {
                        TaskError::Fix(format!(
                            "no project titled {project:?} in {}: set `project` in orchestra.toml's [tasks] to its title or page id (default: the repo folder's name)",
                            about.thing
                        ))
                    })?
            }
        };
        *self.project.borrow_mut() = Some(id.clone());
        Ok(id)
    }

    fn page(&self, id: &str) -> Result<Value, TaskError> {
        let about = About {
            thing: format!("task {id}"),
            fix: "the id (`orchestra tasks` lists them)".into(),
        };
        self.call("GET", &format!("/v1/pages/{id}"), None, &about)
    }

    fn blocks(
        &self,
        id: &str,
        depth: usize,
        seen: &mut usize,
        out: &mut String,
    ) -> Result<(), TaskError> {
        let about = About {
            thing: format!("content of page {id}"),
            fix: "that the page is shared with the integration".into(),
        };
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut path = format!("/v1/blocks/{id}/children?page_size=100");
            if let Some(c) = &cursor {
                path.push_str(&format!("&start_cursor={}", query_word(c)));
            }
            let answer = self.call("GET", &path, None, &about)?;
            for block in answer
                .get("results")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                *seen += 1;
                if *seen > MAX_BLOCKS {
                    return Ok(());
                }
                if let Some(line) = block_text(block) {
                    for l in line.lines() {
                        out.push_str(&"  ".repeat(depth));
                        out.push_str(l);
                        out.push('\n');
                    }
                }
                let nested = block.get("has_children").and_then(Value::as_bool) == Some(true);
                let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
                // A child page or database is a document of its own, not this task's text.
                if nested
                    && depth + 1 < MAX_DEPTH
                    && !matches!(kind, "child_page" | "child_database")
                {
                    if let Some(child) = block.get("id").and_then(Value::as_str).and_then(notion_id)
                    {
                        self.blocks(&child, depth + 1, seen, out)?;
                    }
                }
            }
            match (
                answer.get("has_more").and_then(Value::as_bool),
                answer.get("next_cursor").and_then(Value::as_str),
            ) {
                (Some(true), Some(next)) => cursor = Some(next.to_string()),
                _ => return Ok(()),
            }
        }
        Ok(())
    }
}

impl Notion {
    /// Moves the task to the status named `status`.
    fn set_status(&self, id: &str, status: &str) -> Result<(), TaskError> {
        let schema = self.schema()?;
        let about = About {
            thing: format!("task {id}"),
            fix: format!(
                "that {:?} is an option of the property {:?} (in_progress, done and status_property in orchestra.toml's [tasks])",
                status, self.settings.status_property
            ),
        };
        self.call(
            "PATCH",
            &format!("/v1/pages/{id}"),
            Some(&json!({
                "properties": {
                    (self.settings.status_property.as_str()): {(schema.status_kind.as_str()): {"name": status}}
                }
            })),
            &about,
        )?;
        Ok(())
    }
}

impl TaskSource for Notion {
    fn project(&self) -> String {
        self.settings.project.clone()
    }

    fn open_tasks(&self) -> Result<Vec<Task>, TaskError> {
        let schema = self.schema()?;
        let project = self.project_id()?;
        let filter = json!({
            "and": [
                {"property": schema.relation, "relation": {"contains": project}},
                {"property": self.settings.status_property, (schema.status_kind.as_str()): {"does_not_equal": self.settings.done}},
            ]
        });
        let pages = self.query_all(
            &self.settings.tasks_data_source,
            json!({"filter": filter, "page_size": 100}),
            &self.tasks_source(),
        )?;
        Ok(pages
            .iter()
            .filter_map(|p| page_task(p, &schema, &self.settings.status_property))
            .collect())
    }

    fn task(&self, id: &str) -> Result<Task, TaskError> {
        let schema = self.schema()?;
        let page = self.page(id)?;
        let parent = page
            .get("parent")
            .and_then(|p| p.get("data_source_id"))
            .and_then(Value::as_str)
            .and_then(notion_id);
        if parent.as_deref() != Some(self.settings.tasks_data_source.as_str()) {
            return Err(TaskError::Fix(format!(
                "{id} is not a task of {}: `orchestra tasks` lists them",
                self.tasks_source().thing
            )));
        }
        if page.get("in_trash").and_then(Value::as_bool) == Some(true)
            || page.get("archived").and_then(Value::as_bool) == Some(true)
        {
            return Err(TaskError::Fix(format!("task {id} is in Notion's trash")));
        }
        page_task(&page, &schema, &self.settings.status_property)
            .ok_or_else(|| TaskError::Failed(format!("Notion's answer for task {id} has no id")))
    }

    fn content(&self, id: &str) -> Result<String, TaskError> {
        let mut text = String::new();
        self.blocks(id, 0, &mut 0, &mut text)?;
        Ok(text)
    }

    fn mark_picked(&self, id: &str) -> Result<String, TaskError> {
        self.set_status(id, &self.settings.in_progress)?;
        Ok(format!("is {} now", self.settings.in_progress))
    }

    fn close_merged(&self, id: &str, _merged: &Merged) -> Result<String, TaskError> {
        self.set_status(id, &self.settings.done)?;
        Ok(format!("task {id} is {} now", self.settings.done))
    }
}

/// The name of the first property of `kind` in a data source's schema.
fn property_of_kind(source: &Value, kind: &str) -> Option<String> {
    source
        .get("properties")?
        .as_object()?
        .iter()
        .find(|(_, p)| p.get("type").and_then(Value::as_str) == Some(kind))
        .map(|(name, _)| name.clone())
}

fn read_schema(source: &Value, settings: &Settings) -> Result<Schema, TaskError> {
    let thing = format!("tasks data source {}", settings.tasks_data_source);
    let properties = source
        .get("properties")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            TaskError::Failed(format!("Notion's answer about {thing} has no properties"))
        })?;
    let title = property_of_kind(source, "title")
        .ok_or_else(|| TaskError::Fix(format!("{thing} has no title property")))?;
    let names = || properties.keys().cloned().collect::<Vec<_>>().join(", ");
    let status = properties.get(&settings.status_property).ok_or_else(|| {
        TaskError::Fix(format!(
            "{thing} has no property {:?}: set status_property in orchestra.toml's [tasks] (its properties: {})",
            settings.status_property,
            names()
        ))
    })?;
    let status_kind = match status.get("type").and_then(Value::as_str) {
        Some(kind @ ("status" | "select")) => kind.to_string(),
        other => {
            return Err(TaskError::Fix(format!(
                "the property {:?} of {thing} is a {}, not a status or a select: set status_property in orchestra.toml's [tasks]",
                settings.status_property,
                other.unwrap_or("property of no type")
            )))
        }
    };
    // The names pick and merge move a task to, and listing filters on, must be options.
    let options: Vec<&str> = status
        .get(&status_kind)
        .and_then(|k| k.get("options"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|o| o.get("name").and_then(Value::as_str))
        .collect();
    for (key, name) in [
        ("in_progress", &settings.in_progress),
        ("done", &settings.done),
    ] {
        if !options.is_empty() && !options.contains(&name.as_str()) {
            return Err(TaskError::Fix(format!(
                "the property {:?} of {thing} has no option {name:?}: set {key} in orchestra.toml's [tasks] (its options: {})",
                settings.status_property,
                options.join(", ")
            )));
        }
    }
    let relations: Vec<(&String, &Value)> = properties
        .iter()
        .filter(|(_, p)| p.get("type").and_then(Value::as_str) == Some("relation"))
        .collect();
    let to_projects = relations.iter().find(|(_, p)| {
        p.get("relation")
            .and_then(|r| r.get("data_source_id"))
            .and_then(Value::as_str)
            .and_then(notion_id)
            .as_deref()
            == Some(settings.projects_data_source.as_str())
    });
    let relation = match (to_projects, &relations[..]) {
        (Some((name, _)), _) => (*name).clone(),
        (None, [(name, _)]) => (*name).clone(),
        _ => {
            return Err(TaskError::Fix(format!(
                "{thing} has no relation property to the projects data source {}: check projects_data_source in orchestra.toml's [tasks]",
                settings.projects_data_source
            )))
        }
    };
    Ok(Schema {
        title,
        status_kind,
        relation,
    })
}

/// A page of the tasks data source as a task.
fn page_task(page: &Value, schema: &Schema, status_property: &str) -> Option<Task> {
    let id = page.get("id").and_then(Value::as_str).and_then(notion_id)?;
    let properties = page.get("properties");
    let title = properties
        .and_then(|p| p.get(&schema.title))
        .and_then(|t| t.get("title"))
        .map(rich_text)
        .unwrap_or_default();
    let status = properties
        .and_then(|p| p.get(status_property))
        .and_then(|s| s.get(&schema.status_kind))
        .and_then(|s| s.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    Some(Task {
        id,
        title: super::one_line(&title, 500),
        status,
        url: page
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    })
}

/// The plain text of a rich-text array, control characters (but line ends and tabs)
/// dropped: it becomes an agent's prompt.
fn rich_text(parts: &Value) -> String {
    parts
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("plain_text").and_then(Value::as_str))
        .collect::<String>()
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect()
}

/// One block as plain text, marked as Markdown would (headings, list items, to-dos,
/// quotes, code); `None` for blocks without text.
fn block_text(block: &Value) -> Option<String> {
    let kind = block.get("type").and_then(Value::as_str)?;
    let body = block.get(kind);
    let rich = body.and_then(|b| b.get("rich_text")).map(rich_text);
    let text = || rich.clone().unwrap_or_default();
    Some(match kind {
        "heading_1" => format!("# {}", text()),
        "heading_2" => format!("## {}", text()),
        "heading_3" => format!("### {}", text()),
        "bulleted_list_item" => format!("- {}", text()),
        "numbered_list_item" => format!("1. {}", text()),
        "to_do" => {
            let done = body.and_then(|b| b.get("checked")).and_then(Value::as_bool) == Some(true);
            format!("[{}] {}", if done { "x" } else { " " }, text())
        }
        "quote" => format!("> {}", text()),
        "code" => {
            let language = body
                .and_then(|b| b.get("language"))
                .and_then(Value::as_str)
                .unwrap_or("");
            format!("```{language}\n{}\n```", text())
        }
        "divider" => "---".into(),
        "child_page" => body
            .and_then(|b| b.get("title"))
            .and_then(Value::as_str)
            .map(|t| format!("(page: {t})"))?,
        _ => rich.clone()?,
    })
}

/// A cursor as a URL query value (Notion's are UUIDs; anything else is escaped).
fn query_word(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            projects_data_source: "11111111-1111-1111-1111-111111111111".into(),
            tasks_data_source: "22222222-2222-2222-2222-222222222222".into(),
            project: "app".into(),
            status_property: "Status".into(),
            in_progress: "In progress".into(),
            done: "Done".into(),
        }
    }

    #[test]
    fn the_schema_names_title_status_and_the_relation_to_projects() {
        let source = json!({"properties": {
            "Name": {"type": "title"},
            "Status": {"type": "status"},
            "Owner": {"type": "relation", "relation": {"data_source_id": "33333333333333333333333333333333"}},
            "Project": {"type": "relation", "relation": {"data_source_id": "11111111111111111111111111111111"}},
        }});
        let schema = read_schema(&source, &settings()).unwrap();
        assert_eq!(
            (
                schema.title.as_str(),
                schema.status_kind.as_str(),
                schema.relation.as_str()
            ),
            ("Name", "status", "Project")
        );
        let no_status = json!({"properties": {"Name": {"type": "title"}}});
        let e = read_schema(&no_status, &settings())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no property \"Status\"") && e.contains("Name"),
            "{e}"
        );
        let mut other_names = source.clone();
        other_names["properties"]["Status"]["status"] =
            json!({"options": [{"name": "Todo"}, {"name": "Doing"}, {"name": "Done"}]});
        let e = read_schema(&other_names, &settings())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no option \"In progress\"")
                && e.contains("set in_progress")
                && e.contains("Todo, Doing, Done"),
            "{e}"
        );
        let text_status =
            json!({"properties": {"Name": {"type": "title"}, "Status": {"type": "rich_text"}}});
        let e = read_schema(&text_status, &settings())
            .unwrap_err()
            .to_string();
        assert!(e.contains("is a rich_text"), "{e}");
    }

    #[test]
    fn blocks_read_as_plain_text() {
        let block = |kind: &str, extra: Value| {
            let mut body = json!({"rich_text": [{"plain_text": "Do "}, {"plain_text": "it\u{7}"}]});
            if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
                b.extend(e.clone());
            }
            json!({"type": kind, kind: body})
        };
        assert_eq!(
            block_text(&block("paragraph", json!({}))).as_deref(),
            Some("Do it")
        );
        assert_eq!(
            block_text(&block("heading_2", json!({}))).as_deref(),
            Some("## Do it")
        );
        assert_eq!(
            block_text(&block("to_do", json!({"checked": true}))).as_deref(),
            Some("[x] Do it")
        );
        assert_eq!(
            block_text(&block("code", json!({"language": "rust"}))).as_deref(),
            Some("```rust\nDo it\n```")
        );
        assert_eq!(block_text(&json!({"type": "image", "image": {}})), None);
        assert_eq!(query_word("a b&c"), "a%20b%26c");
    }
}
