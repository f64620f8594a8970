// Connects the SDK's Client to a TypeScript MCP server started as a child process (node + tsx).
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

export async function connectStdio(script: URL): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', fileURLToPath(script)],
    stderr: 'pipe',
  });
  const client = new Client({ name: 'chainkit-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}
