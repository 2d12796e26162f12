import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// The dev server proxies /api to chatd, so the page and the API share an
// origin. CHATD_URL: where chatd listens (default http://127.0.0.1:8080).
export default defineConfig({
  plugins: [react()],
  server: {
    proxy: { '/api': { target: process.env.CHATD_URL ?? 'http://127.0.0.1:8080', changeOrigin: true } },
  },
});
