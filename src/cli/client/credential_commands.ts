/** The `latchkey credential …` helpers, for the command list in main.ts. */
export { credentialDockerCommand } from './credential_docker.js';
export { credentialGitCommand } from './credential_git.js';
export { credentialKubectlCommand } from './credential_kubectl.js';
