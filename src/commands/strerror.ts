/** strerror(3) of a thrown system error, as git prints it (`die_errno`). */
export { errnoText as strerror } from '../errors.js';
