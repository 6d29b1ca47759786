"""setup.py for rlref: reads settings.ini, as nbdev 2 projects do."""
from configparser import ConfigParser
import setuptools

config = ConfigParser(delimiters=['='])
config.read('settings.ini', encoding='utf-8')
cfg = config['DEFAULT']

for o in 'version description keywords author author_email'.split():
    assert o in cfg, f'missing expected setting: {o}'

requirements = cfg.get('requirements', '').split()
dev_requirements = cfg.get('dev_requirements', '').split()
docs_requirements = cfg.get('docs_requirements', '').split()
console_scripts = cfg.get('console_scripts', '').split()

setuptools.setup(
    name=cfg['lib_name'],
    license='Apache Software License 2.0',
    classifiers=['Programming Language :: Python :: 3', 'License :: OSI Approved :: Apache Software License'],
    url=cfg['git_url'],
    packages=setuptools.find_packages(include=['rlref', 'rlref.*']),
    include_package_data=True,
    package_data={'rlref': ['warm_starts/*/*']},   # the shipped testbed warm starts (rlref.warm_start)
    install_requires=requirements,
    extras_require={'dev': dev_requirements, 'docs': docs_requirements},
    python_requires='>=' + cfg['min_python'],
    long_description=open('README.md', encoding='utf-8').read(),
    long_description_content_type='text/markdown',
    zip_safe=False,
    entry_points={'console_scripts': console_scripts, 'nbdev': [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"]},
    version=cfg['version'],
    description=cfg['description'],
    keywords=cfg['keywords'],
    author=cfg['author'],
    author_email=cfg['author_email'],
)
