/**
 * /api/v1/roles: list, read, add, change and remove roles, and page through the people holding
 * one, with the rules of `roles add|update|list|remove`: the built-in `admin` role cannot be
 * removed nor lose a scope of the management API; a role declared in a configuration file is
 * changed there (409).
 */
import type { FastifyInstance } from 'fastify';
import { epochSeconds } from '../../clock.js';
import { refuseManaged } from '../../directory/managed.js';
import { adminRole, permissionText, validGroupNames } from '../../directory/roles.js';
import { checkIfMatch, etagOf } from '../../management/etag.js';
import { managementAudience } from '../../management/management_api.js';
import { defineOperation } from '../../management/operations.js';
import { listAnswerSchema, listQuerySchema, page } from '../../management/pagination.js';
import { notFound, Problem, problemSchema } from '../../management/problem.js';
import { withResourceLock } from '../../management/resource_lock.js';
import {
  adminPermissionsRefusal,
  checkedPermissions,
  roleCreateSchema,
  roleMembers,
  roleMemberSchema,
  roleNameParamsSchema,
  rolePatchSchema,
  roleView,
  roleViewSchema,
} from '../../management/role_resource.js';
import { DuplicateError, type RoleRecord } from '../../store/store.js';

/** The order of `users list`, the username after it so the key is unique. */
function memberKey(username: string): string {
  return `${username.replace(/[A-Z]/g, (c) => c.toLowerCase())}\u0000${username}`;
}

const notFoundAnswer = { description: 'No such role', schema: problemSchema };

export async function managementRoleRoutes(app: FastifyInstance): Promise<void> {
  const { store, clock, config } = app.services;
  const tag = 'roles';
  const managementApi = managementAudience(config.issuer);

  async function current(name: string): Promise<{ role: RoleRecord; etag: string }> {
    const role = await store.findRole(name);
    if (!role) throw notFound(`role "${name}"`);
    return { role, etag: etagOf(roleView(role)) };
  }

  async function answer(name: string, status: number) {
    const { role, etag } = await current(name);
    return { status, headers: { etag }, body: roleView(role) };
  }

  defineOperation(app, {
    method: 'GET',
    path: '/roles',
    operationId: 'listRoles',
    summary: 'List roles, in name order, as `latchkey roles list` does',
    tag,
    scope: 'read:roles',
    query: listQuerySchema,
    responses: { 200: { description: 'A page of roles', schema: listAnswerSchema(roleViewSchema) } },
    async handler({ query }) {
      const result = page(await store.listRoles(), (r) => r.name, query);
      return { status: 200, body: { data: result.data.map(roleView), next: result.next } };
    },
  });

  defineOperation(app, {
    method: 'POST',
    path: '/roles',
    operationId: 'createRole',
    summary: 'Add a role, as `latchkey roles add`',
    tag,
    scope: 'write:roles',
    body: roleCreateSchema,
    etag: true,
    responses: {
      201: { description: 'The role', schema: roleViewSchema },
      409: { description: 'A role with this name exists', schema: problemSchema },
    },
    async handler({ body, audit }) {
      const permissions = await checkedPermissions(store, body.permissions);
      const groups = validGroupNames(body.groups);
      try {
        await store.createRole({ name: body.name, description: body.description, permissions, groups, createdAt: epochSeconds(clock) });
      } catch (err) {
        if (err instanceof DuplicateError) throw new Problem(409, 'exists', `A role "${body.name}" already exists.`);
        throw err;
      }
      audit('role.created', { role: body.name, permissions: permissions.map(permissionText), groups });
      const created = await answer(body.name, 201);
      return { ...created, headers: { ...created.headers, location: `/api/v1/roles/${encodeURIComponent(body.name)}` } };
    },
  });

  defineOperation(app, {
    method: 'GET',
    path: '/roles/{name}',
    operationId: 'getRole',
    summary: 'Read a role',
    tag,
    scope: 'read:roles',
    params: roleNameParamsSchema,
    etag: true,
    responses: { 200: { description: 'The role', schema: roleViewSchema }, 404: notFoundAnswer },
    async handler({ params }) {
      return answer(params.name, 200);
    },
  });

  defineOperation(app, {
    method: 'PATCH',
    path: '/roles/{name}',
    operationId: 'updateRole',
    summary: 'Change a role’s description, permissions or groups, as `latchkey roles update`',
    tag,
    scope: 'write:roles',
    params: roleNameParamsSchema,
    body: rolePatchSchema,
    etag: true,
    responses: {
      200: { description: 'The role as changed', schema: roleViewSchema },
      404: notFoundAnswer,
      409: { description: 'The role is managed by a configuration file, or the change would take a management scope from admin', schema: problemSchema },
      412: { description: 'The role changed since the ETag given', schema: problemSchema },
    },
    async handler({ request, params, body, audit }) {
      return withResourceLock(store, `role:${params.name}`, async () => {
        const { role, etag } = await current(params.name);
        refuseManaged('role', role.name, role);
        checkIfMatch(request, etag);
        const permissions = body.permissions === undefined ? undefined : await checkedPermissions(store, body.permissions);
        const groups = body.groups === undefined ? undefined : validGroupNames(body.groups);
        if (role.name === adminRole && permissions !== undefined) {
          const refusal = adminPermissionsRefusal(managementApi, permissions);
          if (refusal !== undefined) throw new Problem(409, 'built-in', refusal);
        }
        const changes = {
          ...(permissions === undefined ? {} : { permissions }),
          ...(groups === undefined ? {} : { groups }),
          ...(body.description === undefined ? {} : { description: body.description ?? undefined }),
        };
        if (!(await store.updateRole(role.name, changes))) throw notFound(`role "${role.name}"`);
        audit('role.updated', {
          role: role.name,
          ...(permissions === undefined ? {} : { permissions: permissions.map(permissionText) }),
          ...(groups === undefined ? {} : { groups }),
        });
        return answer(role.name, 200);
      });
    },
  });

  defineOperation(app, {
    method: 'DELETE',
    path: '/roles/{name}',
    operationId: 'deleteRole',
    summary: 'Remove a role, as `latchkey roles remove`: nobody holds it any more',
    tag,
    scope: 'write:roles',
    params: roleNameParamsSchema,
    etag: true,
    responses: {
      204: { description: 'Removed' },
      404: notFoundAnswer,
      409: { description: 'The role is built in or managed by a configuration file', schema: problemSchema },
      412: { description: 'The role changed since the ETag given', schema: problemSchema },
    },
    async handler({ request, params, audit }) {
      return withResourceLock(store, `role:${params.name}`, async () => {
        const { role, etag } = await current(params.name);
        if (role.builtIn || role.name === adminRole) throw new Problem(409, 'built-in', `${role.name} is built in and cannot be removed.`);
        refuseManaged('role', role.name, role);
        checkIfMatch(request, etag);
        if (!(await store.removeRole(role.name))) throw notFound(`role "${role.name}"`);
        audit('role.removed', { role: role.name });
        return { status: 204 };
      });
    },
  });

  defineOperation(app, {
    method: 'GET',
    path: '/roles/{name}/members',
    operationId: 'listRoleMembers',
    summary: 'The people holding a role, a page at a time, and how: by hand, through their groups, or both',
    tag,
    scope: 'read:roles',
    params: roleNameParamsSchema,
    query: listQuerySchema,
    responses: { 200: { description: 'A page of members', schema: listAnswerSchema(roleMemberSchema) }, 404: notFoundAnswer },
    async handler({ params, query }) {
      const { role } = await current(params.name);
      const result = page(await store.listRoleMembers(role.name), (u) => memberKey(u.username), query);
      return { status: 200, body: { data: await roleMembers(store, role, result.data), next: result.next } };
    },
  });
}
