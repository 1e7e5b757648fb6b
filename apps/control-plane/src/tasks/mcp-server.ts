import { Router, type Request, type Response } from 'express';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { isAppError } from '@pipeline/errors';
import type { ApiKeyAuthenticator } from '../auth/api-key-authenticator';
import type { Principal } from '../auth/principal';
import { problem } from '../http/problem';
import { pageRequest } from '../http/pagination';
import { requireAutomations, type TaskService } from './task.service';
import { templateCatalog } from './templates/catalog';

export const MCP_PATH = '/mcp';

const runStatuses = ['pending', 'running', 'succeeded', 'failed', 'cancelled', 'never_run'] as const;

function json(value: unknown): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(value, null, 2) }],
    structuredContent: value as Record<string, unknown>,
  };
}

/** An AppError (404 not_found, 400 validation_failed) as a tool error the agent can read. */
async function answer(work: () => Promise<unknown>): Promise<CallToolResult> {
  try {
    return json(await work());
  } catch (error) {
    if (!isAppError(error)) throw error;
    const body = problem(error.status, error.code, error.message);
    return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
  }
}

/** The tools of one caller, scoped to its account. */
export function buildMcpServer(principal: Principal, tasks: TaskService): McpServer {
  const server = new McpServer({ name: 'pipeline-tasks', version: '1.0.0' });
  server.registerTool(
    'tasks_list',
    {
      title: 'List tasks',
      description:
        "Lists the account's tasks, newest first, each with its template, params and latest run " +
        '(status, progress, result, error). Filter by the latest run status or by template.',
      inputSchema: {
        status: z
          .enum(runStatuses)
          .optional()
          .describe('latest run status; never_run for tasks never started'),
        template_id: z.string().optional(),
        limit: z.number().int().min(1).max(100).optional().describe('1-100, default 20'),
        offset: z.number().int().min(0).optional(),
      },
      annotations: { readOnlyHint: true },
    },
    async ({ status, template_id, limit, offset }) =>
      answer(() => tasks.list(principal, { status, templateId: template_id }, pageRequest(limit, offset))),
  );
  server.registerTool(
    'tasks_get',
    {
      title: 'Get a task',
      description:
        'A task with its runs, newest first: status, params, step-by-step progress, the report ' +
        '(result) of a succeeded run and the error of a failed one.',
      inputSchema: {
        task_id: z.string().describe('the task_id POST /api/v1/tasks returned'),
        runs_limit: z.number().int().min(1).max(100).optional().describe('runs to include, default 20'),
      },
      annotations: { readOnlyHint: true },
    },
    async ({ task_id, runs_limit }) => answer(() => tasks.get(principal, task_id, runs_limit)),
  );
  server.registerTool(
    'templates_list',
    {
      title: 'List templates',
      description: 'The templates (agent goals) tasks are created from, with their parameter JSON Schemas.',
      annotations: { readOnlyHint: true },
    },
    async () =>
      json({
        data: templateCatalog.map((t) => ({
          template_id: t.id,
          version: t.version,
          name: t.name,
          description: t.description,
          params_schema: t.paramsSchema,
          steps: t.steps.map((s) => ({ id: s.id, name: s.name })),
        })),
      }),
  );
  return server;
}

/**
 * The agent tool interface: an MCP server (Streamable HTTP, stateless, JSON responses) at
 * `POST /mcp`. Each request is authenticated with `Authorization: Bearer <API_KEY>`, needs the
 * scope `tasks.read` and the Automations feature, and sees only the key's account.
 */
export function mcpRouter(authenticator: ApiKeyAuthenticator, tasks: TaskService): Router {
  const router = Router();
  router.post(MCP_PATH, async (req: Request, res: Response, next) => {
    try {
      const principal = await authenticator.authenticate(req, ['tasks.read']);
      requireAutomations(principal);
      const server = buildMcpServer(principal, tasks);
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    } catch (error) {
      next(error);
    }
  });
  // Stateless: no server-initiated stream (GET) and no session to end (DELETE).
  router.all(MCP_PATH, (req, res) => {
    res
      .status(405)
      .set('Allow', 'POST')
      .type('application/problem+json')
      .json(problem(405, 'method_not_allowed', `${req.method} ${MCP_PATH} is not supported; POST JSON-RPC`));
  });
  return router;
}
