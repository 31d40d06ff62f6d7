def main(): print('cli')
