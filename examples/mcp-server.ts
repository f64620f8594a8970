// The built-in task chains served as MCP tools over stdio, on the in-memory task backend.
// Run: npx tsx examples/mcp-server.ts   (then connect any MCP client, e.g. the MCP Inspector)
// The tools: find_and_update, find_and_delete, find_and_complete, task_summary and confirm_action.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createRunner, taskChains } from 'chainkit';
import { serveChains } from 'chainkit/mcp';
import { createTaskStore, fixtures } from 'chainkit/testing';

const store = createTaskStore({ users: fixtures.users });
const runner = createRunner({ invoker: store.invoker, chains: [...taskChains] });

const server = serveChains(runner, taskChains, {
  name: 'chainkit-tasks',
  version: '1.0.0',
  instructions:
    'Task tools for the signed-in user. Destructive actions return awaiting_confirmation: ask the user, then call confirm_action.',
  // stdio has no authentication: this demo acts as Alice. Over HTTP, derive the user from
  // extra.authInfo instead — the model never chooses whose tasks it touches.
  context: () => ({ userId: fixtures.alice }),
});

await server.connect(new StdioServerTransport());
// stdout carries the protocol; diagnostics go to stderr.
console.error('chainkit-tasks MCP server ready on stdio');

const shutdown = async (): Promise<void> => {
  await server.close();
  await runner.close();
};
process.stdin.on('close', () => void shutdown());
process.on('SIGINT', () => void shutdown().then(() => process.exit(0)));
