//! The prepared contexts as the first request shows them: JSON data
//! frames, compacted so a large change stays within the request budget.
//! A generated-heavy change drops the raw staged diff for the context pack
//! and the handwritten files' raw diff; a large inventory becomes a
//! summary with the busiest paths; context-pack lists are capped. Every
//! compaction says what it left out.

use gitagent_git::{AmendContext, FileStat, StagedContext};
use serde_json::{Map, Value, json};

/// Inventories with more paths than this are summarized.
const INVENTORY_LIMIT: usize = 300;
/// The previous HEAD commit's inventory is contrast; it is summarized
/// sooner.
const CONTRAST_LIMIT: usize = 100;
/// A summary keeps the stats of this many busiest paths.
const BUSIEST: usize = 40;
/// Context-pack groups and outliers shown at most.
const PACK_ITEMS: usize = 60;

/// The normal-mode data frame.
pub fn staged(context: &StagedContext) -> Value {
    let mut map = to_map(context);
    if context.is_generated_heavy() {
        summarize(&mut map, "staged", &["staged_paths", "staged_status"], "staged_stats", &context.staged_stats, 0);
        map.remove("diff");
        map.insert("diff_omitted".into(), json!(
            "generated-heavy change: context_pack summarizes the generated groups; outlier_diff holds the raw diff of every handwritten file"
        ));
    } else if context.staged_paths.len() > INVENTORY_LIMIT {
        summarize(
            &mut map,
            "staged",
            &["staged_paths", "staged_status"],
            "staged_stats",
            &context.staged_stats,
            BUSIEST,
        );
    }
    if context.previous_head_paths.len() > CONTRAST_LIMIT {
        summarize(
            &mut map,
            "previous_head",
            &["previous_head_paths"],
            "previous_head_stats",
            &context.previous_head_stats,
            0,
        );
    }
    cap_pack(&mut map, "context_pack");
    Value::Object(map)
}

/// The amend-mode data frame.
pub fn amend(context: &AmendContext) -> Value {
    let mut map = to_map(context);
    if context.final_paths.len() > INVENTORY_LIMIT {
        summarize(&mut map, "final", &["final_paths"], "final_stats", &context.final_stats, BUSIEST);
    }
    if context.head_paths.len() > INVENTORY_LIMIT {
        summarize(&mut map, "head", &["head_paths"], "head_stats", &context.head_stats, 0);
    }
    if context.staged_paths.len() > INVENTORY_LIMIT {
        summarize(&mut map, "staged", &["staged_paths", "staged_status"], "staged_stats", &context.staged_stats, 0);
    }
    cap_pack(&mut map, "final_context_pack");
    Value::Object(map)
}

fn to_map(value: &impl serde::Serialize) -> Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// Replaces the `lists` and `stats_key` of `map` with `<prefix>_summary`:
/// counts, sample paths and the `busiest` paths' stats.
fn summarize(
    map: &mut Map<String, Value>,
    prefix: &str,
    lists: &[&str],
    stats_key: &str,
    stats: &[FileStat],
    busiest: usize,
) {
    for key in lists.iter().chain(&[stats_key]) {
        map.remove(*key);
    }
    let mut sorted: Vec<&FileStat> = stats.iter().collect();
    sorted.sort_by(|a, b| (b.adds + b.deletes).cmp(&(a.adds + a.deletes)).then_with(|| a.path.cmp(&b.path)));
    let mut summary = json!({
        "paths": stats.len(),
        "adds": stats.iter().map(|stat| stat.adds).sum::<usize>(),
        "deletes": stats.iter().map(|stat| stat.deletes).sum::<usize>(),
        "sample_paths": stats.iter().take(5).map(|stat| stat.path.as_str()).collect::<Vec<_>>(),
        "complete_list": format!("left out of this request; {} list every path", tool_hint(prefix)),
    });
    if busiest > 0 {
        summary["busiest"] = json!(sorted.into_iter().take(busiest).collect::<Vec<_>>());
    }
    map.insert(format!("{prefix}_summary"), summary);
}

fn tool_hint(prefix: &str) -> &'static str {
    match prefix {
        "staged" => "git_staged_paths and git_staged_stat",
        "final" => "git_final_amended_diff and the staged tools",
        _ => "git_diff_against_parent and git_head_show",
    }
}

/// Caps the groups and outliers of the context pack at `key`.
fn cap_pack(map: &mut Map<String, Value>, key: &str) {
    let Some(Value::Object(pack)) = map.get_mut(key) else { return };
    for list in ["groups", "outliers"] {
        if let Some(Value::Array(items)) = pack.get_mut(list)
            && items.len() > PACK_ITEMS
        {
            let omitted = items.len() - PACK_ITEMS;
            items.truncate(PACK_ITEMS);
            pack.insert(format!("{list}_omitted"), json!(omitted));
        }
    }
}
