export { hostileBodies, type HostileBody } from './hostile-bodies';
