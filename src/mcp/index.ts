/**
 * chainkit/mcp: call tools on MCP servers, and serve chains as an MCP server.
 *
 * @module chainkit/mcp
 */
export { mcpInvoker, toolsFromMcp, McpToolError, type ToolsFromMcpOptions } from './client.js';
export { serveChains, CONFIRM_TOOL, type ServeChainsOptions, type McpRequestExtra } from './server.js';
