import path from 'node:path';
import { exitUnlessNodeSupported } from '@pipeline/config';

// Imported first by main.ts: on the wrong Node the service stops before anything else loads,
// naming the version it needs (engines.node, derived from the repository's .node-version).
exitUnlessNodeSupported(path.join(__dirname, '../package.json'));
