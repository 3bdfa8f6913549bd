/**
 * /admin/roles: named bundles of API permissions given to people (the rules of `latchkey roles`):
 * the list with how many hold each, a form that creates one with permissions picked from every
 * API's declared scopes, and one role's page — its description and permissions, its members (add
 * one by username, take one away), and removal. The built-in `admin` role (who may use this
 * console) cannot be removed, and an administrator cannot take it from themselves here.
 */
import { managedNotice } from '../../console/console_page.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { adminRole, permissionText, resolvePermissions, validRoleDescription, validRoleName } from '../../directory/roles.js';
import { epochSeconds } from '../../clock.js';
import { parseFields } from '../../http/form.js';
import type { Services } from '../../services.js';
import { DuplicateError, MissingReferenceError, type Permission, type RoleRecord } from '../../store/store.js';
import {
  adminAudit,
  adminForm,
  adminGate,
  checked,
  checkedAsync,
  checkedValues,
  doneRedirect,
  hereOf,
  noticeOf,
  notFound,
  printable,
  renderAdmin,
  storedKey,
  when,
  pathSegment,
  type Admin,
  type Gate,
  type Notice,
} from '../../console/console_page.js';

const params = z.object({ name: storedKey(64).min(1) });
const csrfField = z.string().max(256).optional();
const pageQuery = z.object({ done: z.string().max(32).optional() });
const createForm = z
  .object({ csrf_token: csrfField, name: z.string().max(1024).default(''), description: z.string().max(4096).default('') })
  .catchall(z.string().max(4200));
const updateForm = z.object({ csrf_token: csrfField, description: z.string().max(4096).default('') }).catchall(z.string().max(4200));
const plainForm = z.object({ csrf_token: csrfField });
const addMemberForm = z.object({ csrf_token: csrfField, username: storedKey(1024).default('') });
const removeMemberForm = z.object({ csrf_token: csrfField, user_id: storedKey(256).default('') });

const notices: Record<string, string> = {
  created: 'The role was created.',
  updated: 'Saved.',
  removed: 'The role was removed, and taken from everyone who held it.',
  member_added: 'The role was granted.',
  member_removed: 'The role was taken away.',
  member_none: 'They did not hold the role.',
};

const rolePath = (name: string) => `/admin/roles/${pathSegment(name)}`;
const backToRoles = { href: '/admin/roles', label: 'Back to the roles' };

/** Every API's declared scopes as checkboxes `permission_<n>`, ticked where `held` has them. */
async function permissionChoices(services: Services, held: readonly string[]) {
  let n = 0;
  return (await services.store.listApis()).map((api) => ({
    identifier: api.identifier,
    name: api.name,
    scopes: api.scopes.map((scope) => {
      const text = permissionText({ api: api.identifier, scope });
      return { scope, text, field: `permission_${n++}`, checked: held.includes(text) };
    }),
  }));
}

interface RoleValues {
  name: string;
  description: string;
  permissions: string[];
}

export async function adminRoleRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store, clock } = services;
  const page = { config: { page: true } };

  async function showRoles(
    request: FastifyRequest,
    reply: FastifyReply,
    notice?: Notice,
    values: RoleValues = { name: '', description: '', permissions: [] },
    status = 200,
  ) {
    const roles = await store.listRoles();
    return renderAdmin(
      request,
      reply,
      services,
      'roles',
      'roles',
      {
        title: 'Roles',
        roles: roles.map((r) => ({
          name: r.name,
          description: r.description ?? '',
          permissions: r.permissions.map(permissionText),
          members: r.members,
          builtIn: r.builtIn,
        })),
        choices: await permissionChoices(services, values.permissions),
        values,
        notice,
      },
      status,
    );
  }

  async function showRole(
    request: FastifyRequest,
    reply: FastifyReply,
    admin: Admin,
    role: RoleRecord,
    notice?: Notice,
    values?: Omit<RoleValues, 'name'>,
    status = 200,
  ) {
    const members = await store.listRoleMembers(role.name);
    const held = values?.permissions ?? role.permissions.map(permissionText);
    return renderAdmin(
      request,
      reply,
      services,
      'role',
      'roles',
      {
        title: `Role ${role.name}`,
        role: {
          name: role.name,
          builtIn: role.builtIn,
          created: when(role.createdAt),
          permissions: role.permissions.map(permissionText),
          groups: role.groups,
          managedBy: role.managedBy,
        },
        path: rolePath(role.name),
        description: values?.description ?? role.description ?? '',
        choices: await permissionChoices(services, held),
        members: members.map((m) => ({ id: m.id, username: m.username, email: m.email, disabled: m.disabled, self: m.id === admin.user.id })),
        notice,
      },
      status,
    );
  }

  /** The permissions ticked, each one an API's declared scope. */
  const permissionsOf = (form: Record<string, unknown>): Promise<Permission[]> => resolvePermissions(store, checkedValues(form, 'permission', 1000));

  app.get('/admin/roles', page, async (request, reply) => {
    const gate = await adminGate(request, reply, services, hereOf(request, '/admin/roles'));
    if (!gate.ok) return gate.reply;
    const { done } = parseFields(pageQuery, request.query);
    return showRoles(request, reply, noticeOf(done, notices));
  });

  app.post('/admin/roles', page, async (request, reply) => {
    const gate = await adminForm(request, reply, services, createForm, '/admin/roles');
    if (!gate.ok) return gate.reply;
    const { admin, form } = gate;
    const values = { name: form.name.trim(), description: form.description, permissions: checkedValues(form, 'permission', 1000) };
    const fields = checked(
      () => ({ name: validRoleName(values.name), description: validRoleDescription(printable(values.description, 'The description')) }),
      'create',
    );
    if (!fields.ok) return showRoles(request, reply, fields.notice, values, 400);
    const permissions = await checkedAsync(() => permissionsOf(form), 'create');
    if (!permissions.ok) return showRoles(request, reply, permissions.notice, values, 400);
    const { name, description } = fields.value;
    const taken = () => showRoles(request, reply, { kind: 'error', text: `A role named ${name} exists already.`, about: 'create' }, values, 409);
    if (await store.findRole(name)) return taken();
    try {
      await store.createRole({ name, description, permissions: permissions.value, createdAt: epochSeconds(clock) });
    } catch (err) {
      if (err instanceof DuplicateError) return taken();
      if (err instanceof MissingReferenceError)
        return showRoles(request, reply, { kind: 'error', text: 'An API was removed meanwhile. Choose the permissions again.', about: 'create' }, values, 409);
      throw err;
    }
    adminAudit(request, admin, 'role.created', { role: name, permissions: permissions.value.map(permissionText) });
    return doneRedirect(reply, rolePath(name), 'created');
  });

  app.get('/admin/roles/:name', page, async (request, reply) => {
    const gate = await adminGate(request, reply, services, hereOf(request, '/admin/roles'));
    if (!gate.ok) return gate.reply;
    const { name } = parseFields(params, request.params);
    const role = await store.findRole(name);
    if (!role) return notFound(request, reply, services, 'role', backToRoles);
    const { done } = parseFields(pageQuery, request.query);
    return showRole(request, reply, gate.admin, role, noticeOf(done, notices));
  });

  /** A form on a role's page: the acting admin, the form and the role (or the reply that refused). */
  async function roleForm<T extends { csrf_token?: string | undefined }>(
    request: FastifyRequest,
    reply: FastifyReply,
    schema: z.ZodType<T>,
  ): Promise<Gate<{ form: T; role: RoleRecord }>> {
    // The path itself is checked once the person is known to be an administrator.
    const param = (request.params as Record<string, unknown>).name;
    const rawName = (typeof param === 'string' ? param : '').slice(0, 64);
    const gate = await adminForm(request, reply, services, schema, rolePath(rawName));
    if (!gate.ok) return gate;
    const { name } = parseFields(params, request.params);
    const role = await store.findRole(name);
    if (!role) return { ok: false, reply: await notFound(request, reply, services, 'role', backToRoles) };
    return { ok: true, admin: gate.admin, form: gate.form, role };
  }

  app.post('/admin/roles/:name/update', page, async (request, reply) => {
    const got = await roleForm(request, reply, updateForm);
    if (!got.ok) return got.reply;
    const { admin, role, form } = got;
    if (role.managedBy !== undefined) return showRole(request, reply, admin, role, managedNotice('role', role.name, role.managedBy), undefined, 409);
    const values = { description: form.description, permissions: checkedValues(form, 'permission', 1000) };
    const description = checked(() => validRoleDescription(printable(values.description, 'The description')), 'edit');
    if (!description.ok) return showRole(request, reply, admin, role, description.notice, values, 400);
    const permissions = await checkedAsync(() => permissionsOf(form), 'edit');
    if (!permissions.ok) return showRole(request, reply, admin, role, permissions.notice, values, 400);
    let updated: boolean;
    try {
      updated = await store.updateRole(role.name, { permissions: permissions.value, description: description.value });
    } catch (err) {
      if (!(err instanceof MissingReferenceError)) throw err;
      return showRole(
        request,
        reply,
        admin,
        (await store.findRole(role.name)) ?? role,
        { kind: 'error', text: 'An API was removed meanwhile. Choose the permissions again.', about: 'edit' },
        values,
        409,
      );
    }
    if (!updated) return notFound(request, reply, services, 'role', backToRoles);
    adminAudit(request, admin, 'role.updated', { role: role.name, permissions: permissions.value.map(permissionText), description: description.value });
    return doneRedirect(reply, rolePath(role.name), 'updated');
  });

  app.post('/admin/roles/:name/remove', page, async (request, reply) => {
    const got = await roleForm(request, reply, plainForm);
    if (!got.ok) return got.reply;
    const { admin, role } = got;
    if (role.managedBy !== undefined) return showRole(request, reply, admin, role, managedNotice('role', role.name, role.managedBy), undefined, 409);
    if (role.builtIn || role.name === adminRole) {
      return showRole(
        request,
        reply,
        admin,
        role,
        { kind: 'error', text: `The built-in ${role.name} role cannot be removed.`, about: 'remove' },
        undefined,
        400,
      );
    }
    if (!(await store.removeRole(role.name))) return notFound(request, reply, services, 'role', backToRoles);
    adminAudit(request, admin, 'role.removed', { role: role.name, members: role.members });
    return doneRedirect(reply, '/admin/roles', 'removed');
  });

  app.post('/admin/roles/:name/members/add', page, async (request, reply) => {
    const got = await roleForm(request, reply, addMemberForm);
    if (!got.ok) return got.reply;
    const { admin, role, form } = got;
    const username = form.username.trim();
    const user = username === '' ? undefined : await store.findUserByUsername(username);
    if (!user)
      return showRole(
        request,
        reply,
        admin,
        role,
        { kind: 'error', text: `There is no user ${username.slice(0, 64) || 'of that name'}.`, about: 'members' },
        undefined,
        404,
      );
    if (!(await store.grantRole(user.id, role.name, epochSeconds(clock)))) return notFound(request, reply, services, 'role', backToRoles);
    adminAudit(request, admin, 'user.role_granted', { userId: user.id, role: role.name });
    return doneRedirect(reply, rolePath(role.name), 'member_added');
  });

  app.post('/admin/roles/:name/members/remove', page, async (request, reply) => {
    const got = await roleForm(request, reply, removeMemberForm);
    if (!got.ok) return got.reply;
    const { admin, role, form } = got;
    if (role.name === adminRole && form.user_id === admin.user.id) {
      return showRole(
        request,
        reply,
        admin,
        role,
        { kind: 'error', text: 'You cannot take away your own admin role: another administrator can.', about: 'members' },
        undefined,
        400,
      );
    }
    if (form.user_id === '' || !(await store.revokeRole(form.user_id, role.name))) return doneRedirect(reply, rolePath(role.name), 'member_none');
    adminAudit(request, admin, 'user.role_revoked', { userId: form.user_id, role: role.name });
    return doneRedirect(reply, rolePath(role.name), 'member_removed');
  });
}
