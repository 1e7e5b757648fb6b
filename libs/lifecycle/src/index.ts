export { drainHttpServer } from './http-drain';
export { Shutdown, type ShutdownHook, type ShutdownOptions } from './shutdown';
