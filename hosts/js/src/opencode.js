// The OpenCode plugin (`toolprune/opencode`, issue 26 §2; docs/hooks.md
// "OpenCode"): prunes MCP tool results in OpenCode's own process through
// this package's event-loop API (`turn.onToolResult`), no binary needed.
//
// - `chat.message`: the user's message is the turn's request (the guest
//   takes the basis from it); recorded in the session's `request.json` too.
// - `tool.execute.after`: an MCP result (`output.content`, the raw MCP
//   content list) whose tool is prunable (the configuration's globs, asked
//   of the guest: `settings.is-prunable`) and whose content is one text
//   block is pruned; the pruned body replaces that block's text. The
//   call's `args` go to the guest (never sent, logged or stored: only a
//   key), so that the same tool called again with the same arguments after
//   its result was pruned passes unpruned (SPEC §2, gate `repeated`, with
//   a log line): a model that asks again gets everything. Changing
//   `output.content` is what reaches the model (`output.output` does not:
//   tests/e2e/FACTS-opencode.md). Built-in tools (`{title, metadata,
//   output}`) pass unchanged.
// - `omitted`: an OpenCode custom tool (the plugin's `tool` hook), answered
//   in this process from the session store. OpenCode hands the tool its
//   own `sessionID`, so the model can name an id but never another
//   session; nothing else (no `toolprune mcp`, no token) has to be set up.
//   When OpenCode's config takes the tool away from the model (`tools` or
//   `permission` denying `omitted`), nothing is pruned: no way back.
// - The store: the Rust CLI's on-disk session store (`src/store.js`,
//   agent label `opencode`, one session per OpenCode session id), so ids
//   are unique for the whole conversation, also across `opencode run
//   --continue`, and `toolprune stats` / `doctor` / `mcp` read it.
// - Configuration: the Rust CLI's (`pruner.config(env)`: the guest's
//   `settings.resolve` over the same file and variables): `enabled`,
//   `threshold`, `lang`, `prunable`, `[store]` bounds, the Jev scorer
//   (offline when no token is set).
// - `event` `session.deleted`: the session's records are deleted, its
//   counter kept (a tombstone: an old id answers `not_found`).
// - Fail-open: any error (component, configuration, store, scorer) leaves
//   the result as OpenCode made it; a hook never throws.
//
// The module exports only the plugin (OpenCode calls every export).

import { Pruner } from './pruner.js';
import { JevScorer } from './jev.js';
import { Root } from './store.js';

const AGENT = 'opencode';
/** What the model reads when the `omitted` tool cannot answer at all (the guest's text when it can give one). */
const UNAVAILABLE = 'omitted is unavailable right now; try again';

/** The one text block of an MCP result's content list, or null (several blocks, another kind, no text). */
function soleText(content) {
  if (!Array.isArray(content) || content.length !== 1) return null;
  const block = content[0];
  return block && block.type === 'text' && typeof block.text === 'string' ? block : null;
}

/** The user's words in a `chat.message` output: its text parts (not OpenCode's synthetic ones), joined by blank lines. */
function messageText(parts) {
  if (!Array.isArray(parts)) return null;
  const texts = parts.filter((p) => p && p.type === 'text' && typeof p.text === 'string' && !p.synthetic && !p.ignored).map((p) => p.text);
  return texts.length > 0 ? texts.join('\n\n') : null;
}

/** OpenCode's name of a server's character set in tool names (`NAME_tool`): other characters than `[A-Za-z0-9_-]` as `_`. */
function sanitized(name) {
  return name.replace(/[^A-Za-z0-9_-]/g, '_');
}

/**
 * Every name the plugin knows for OpenCode's MCP tool `tool`
 * (`<server>_<tool>`): the name itself and, for the configured server it
 * starts with (else its first `_`), the bare tool and its `mcp__<server>__<tool>`,
 * `mcp_<server>_<tool>` spellings (the guest's default globs). The guest
 * decides on all of them at once (SPEC §2: never prunable under any name wins).
 */
function candidateNames(tool, servers) {
  const names = [tool];
  const server = [...servers].map(sanitized).filter((s) => tool.startsWith(`${s}_`)).sort((a, b) => b.length - a.length)[0];
  const cut = server !== undefined ? server.length : tool.indexOf('_');
  if (cut > 0 && cut < tool.length - 1) {
    const [name, bare] = [tool.slice(0, cut), tool.slice(cut + 1)];
    names.push(bare, `mcp__${name}__${bare}`, `mcp_${name}_${bare}`);
  }
  return names;
}

/** OpenCode's wildcard: `*` any run of characters, `?` one, everything else itself; the whole name. */
function wildcard(name, pattern) {
  const source = [...pattern].map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[\\^$.|+()[\]{}]/g, '\\$&'))).join('');
  return new RegExp(`^${source}$`, 's').test(name);
}

/**
 * Whether OpenCode's configuration (the `config` hook's object) takes the
 * tool `name` away from the model, as OpenCode decides it: the legacy
 * `tools` map (`name-or-glob: false` a deny, `true` an allow) merged under
 * `permission` (one action for every tool, or `name-or-glob: action` or
 * `name-or-glob: {input-pattern: action}`) into rules in that order; the
 * last rule whose name matches decides, and the tool is gone when it
 * denies every input (`"deny"`, or its input pattern is `*`). Agent-level
 * `agent.<name>.permission` is not read (the hook is not told the agent).
 * Anything else counts as not denied.
 */
function toolDenied(cfg, name) {
  const merged = {};
  for (const [key, on] of Object.entries(cfg?.tools ?? {})) if (typeof on === 'boolean') merged[key] = on ? 'allow' : 'deny';
  const permission = cfg?.permission;
  if (typeof permission === 'string') merged['*'] = permission;
  else if (permission && typeof permission === 'object') Object.assign(merged, permission);
  const rules = [];
  for (const [key, value] of Object.entries(merged)) {
    if (typeof value === 'string') rules.push([key, '*', value]);
    else if (value && typeof value === 'object') for (const [pattern, action] of Object.entries(value)) rules.push([key, pattern, action]);
  }
  const last = rules.filter(([key]) => wildcard(name, key)).pop();
  return last !== undefined && last[1] === '*' && last[2] === 'deny';
}

/** The component, configuration, scorer and store root, or null when any of them fails (then nothing is pruned). */
async function load(env) {
  const pruner = await Pruner.load();
  try {
    const config = pruner.config(env);
    const scorer = JevScorer.fromConfig(config, env) ?? 'offline';
    const root = Root.fromEnv(env);
    return { pruner, config, scorer, root };
  } catch (error) {
    pruner.close();
    throw error;
  }
}

/**
 * The plugin: `async (ctx, options) => hooks`, as OpenCode calls every
 * export of a plugin module. Reads the environment once (`process.env`:
 * `TOOLPRUNE_*`, the store root's variables). Never rejects: without a
 * component or a configuration it returns hooks that change nothing.
 */
export async function ToolprunePlugin() {
  const env = { ...process.env };
  let state = null;
  try {
    state = await load(env);
  } catch {
    state = null;
  }
  if (!state) return {};
  const { pruner, config, scorer, root } = state;
  // Sessions untouched for `[store] max_age_hours` go, as the Rust hooks sweep them.
  root.sweep(config.store.maxAgeS);
  const servers = new Set();
  /** Whether OpenCode's config takes `omitted` from the model: then no way back, so nothing is pruned. */
  let noWayBack = false;
  /** sessionID → { session, conversation, request } (opened on first use). */
  const sessions = new Map();

  const open = (sessionID) => {
    let entry = sessions.get(sessionID);
    if (entry) return entry;
    const bounds = { maxRecords: config.store.maxRecords, maxChars: config.store.maxChars };
    const session = root.session(AGENT, sessionID, bounds);
    const conversation = pruner.conversation({
      enabled: config.enabled,
      threshold: config.threshold,
      lang: config.lang,
      agent: AGENT,
      scorer,
      // Lines are written with the stored id by the hooks below.
      log: () => {},
      store: bounds,
      resultStore: session,
    });
    entry = { session, conversation, request: null };
    sessions.set(sessionID, entry);
    return entry;
  };

  let omittedTool;
  try {
    omittedTool = pruner.omittedTool('plain', config.lang);
  } catch {
    pruner.close();
    return {};
  }

  return {
    config: async (cfg) => {
      try {
        for (const name of Object.keys(cfg?.mcp ?? {})) servers.add(name);
      } catch {
        // names from the tool alone
      }
      try {
        noWayBack = toolDenied(cfg, omittedTool.name);
      } catch {
        noWayBack = false;
      }
    },

    // OpenCode deleted a session (`session.deleted`, properties `{sessionID, info}`): its
    // records go, the counter stays (a tombstone), as the Rust hooks' session end.
    event: async ({ event } = {}) => {
      try {
        if (event?.type !== 'session.deleted') return;
        const id = event.properties?.sessionID ?? event.properties?.info?.id;
        sessions.delete(id);
        root.existingSession(AGENT, id)?.end();
      } catch {
        // the age sweep deletes it later
      }
    },

    'chat.message': async (input, output) => {
      try {
        const text = messageText(output?.parts);
        if (typeof input?.sessionID !== 'string' || text === null) return;
        const entry = open(input.sessionID);
        entry.request = text;
        entry.session.recordRequest(text);
      } catch {
        // fail-open: no basis, nothing pruned
      }
    },

    'tool.execute.after': async (input, output) => {
      try {
        if (typeof input?.tool !== 'string' || typeof input.sessionID !== 'string' || input.tool === omittedTool.name) return;
        const block = soleText(output?.content);
        if (!block) return;
        // No `omitted` for the model (OpenCode's config denies it): a result is not prunable (gate not_prunable).
        const prunable = !noWayBack && pruner.isPrunable(candidateNames(input.tool, servers), config.prunable);
        const entry = open(input.sessionID);
        entry.request ??= entry.session.request()?.request ?? null;
        const turn = entry.conversation.turn(entry.request ?? '');
        const text = block.text;
        const args = input.args === undefined || input.args === null ? undefined : input.args;
        const result = await turn.onToolResult({ tool: input.tool, text, ok: output.isError !== true, prunable, arguments: args });
        if (result.logLine !== null) entry.session.log(result.logLine, result.id ?? undefined);
        if (result.body !== text && Array.isArray(output.content) && output.content[0] === block) {
          output.content = [{ ...block, text: result.body }];
        }
      } catch {
        // fail-open: the result as OpenCode made it
      }
    },

    tool: {
      [omittedTool.name]: {
        description: omittedTool.description,
        // JSON Schema properties: OpenCode builds `{type: "object", properties, required: every key}`
        // from them (the guest's parameters are all required).
        args: omittedTool.parameters.properties,
        async execute(args, context) {
          try {
            const entry = open(context.sessionID);
            const answer = entry.conversation.omitted(args ?? {});
            entry.session.log(answer.logLine);
            return answer.text;
          } catch {
            return UNAVAILABLE;
          }
        },
      },
    },
  };
}

export default ToolprunePlugin;
